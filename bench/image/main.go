// Command image-bench measures benchctl's image distribution against the raw Engine
// operations on the testbed (tests/testbed/up.sh must be up):
//
//   - cold publish: ImageSave streamed into the cache (sha256 and XXH64, fsync, atomic
//     rename) vs. a plain ImageSave copied to a file;
//   - Ensure on an engine without the image (XXH64 verified while loading, the tail held
//     back) vs. a plain ImageLoad of the same tar;
//   - warm Ensure (the engine has the image);
//   - plain ImageLoads of the tar read through an inline XXH64 and an inline sha256 (no
//     hold-back), to tell the cost of a checksum on this machine from the cost of Ensure's
//     own machinery.
//
// The variants of each repetition run in a rotated order. Usage:
//
//	go run ./bench/image [-size 1024] [-reps 3]
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/bench/internal/engines"
	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/tests/testbed"
)

func main() {
	sizeMiB := flag.Int("size", 1024, "image payload in MiB")
	reps := flag.Int("reps", 3, "repetitions (the median is reported)")
	flag.Parse()
	tb, err := testbed.Read(testbed.EnvFile())
	if err != nil {
		log.Fatalf("no testbed: %v (run tests/testbed/up.sh)", err)
	}
	ctx := context.Background()
	work, err := os.MkdirTemp(tb.SharedDir, "image-bench-")
	timing.Check(err)
	defer os.RemoveAll(work)
	n1, n2 := engines.Connect(tb.Sockets[tb.Nodes[0]]), engines.Connect(tb.Sockets[tb.Nodes[1]])

	// A context with one big random file (incompressible, like model weights).
	ctxDir := filepath.Join(work, "ctx")
	timing.Check(os.MkdirAll(ctxDir, 0o755))
	timing.Check(os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY payload.bin /payload.bin\n"), 0o644))
	engines.WriteRandom(filepath.Join(ctxDir, "payload.bin"), int64(*sizeMiB)<<20)
	in := image.BuildInput{Dockerfile: filepath.Join(ctxDir, "Dockerfile"), Context: ctxDir,
		BuildArgs: []manifest.EnvVar{{Name: "BUST", Value: fmt.Sprint(time.Now().UnixNano())}}}
	key, err := image.Key(in)
	timing.Check(err)
	tag := "benchctl/image-bench:" + image.ShortKey(key)
	cache, err := image.OpenCache(filepath.Join(work, "shared"))
	timing.Check(err)
	log.Printf("building a %d MiB image on %s", *sizeMiB, tb.Nodes[0])
	b := &image.DockerBuilder{Engine: n1}
	entry, err := b.Build(ctx, image.BuildRequest{Input: in, Key: key, Tag: tag, Manifest: "image-bench", Cache: cache})
	timing.Check(err)
	log.Printf("image %s, tar %d MiB", entry.ImageID, entry.Size>>20)

	var rawSave, ourSave, rawLoad, hashLoad, xxhLoad, ourLoad, warm []time.Duration
	raw := filepath.Join(work, "raw.tar")
	// A plain ImageLoad of raw.tar, read as it is or through wrap.
	plainLoad := func(wrap func(io.Reader) io.Reader) func() {
		return func() {
			f, err := os.Open(raw)
			timing.Check(err)
			res, err := n2.ImageLoad(ctx, wrap(f), client.ImageLoadWithQuiet(true))
			timing.Check(err)
			io.Copy(io.Discard, res)
			res.Close()
			f.Close()
		}
	}
	type variant struct {
		times *[]time.Duration
		run   func()
		prep  func()
	}
	saves := []variant{
		{&rawSave, func() { // ImageSave copied to a file (fsync so both sides pay for durability)
			rc, err := n1.ImageSave(ctx, []string{tag})
			timing.Check(err)
			f, err := os.Create(raw)
			timing.Check(err)
			_, err = io.Copy(f, rc)
			timing.Check(err)
			timing.Check(f.Sync())
			timing.Check(f.Close())
			rc.Close()
		}, func() { os.Remove(raw) }},
		{&ourSave, func() {
			_, err := image.PublishFromEngine(ctx, n1, cache, key, tag, image.Meta{ImageID: entry.ImageID, Tags: []string{tag}, Builder: "docker"}, nil)
			timing.Check(err)
		}, func() { timing.Check(cache.Remove(key)) }},
	}
	emptyN2 := func() { engines.RemoveImage(n2, entry.ImageID) }
	loads := []variant{
		{&rawLoad, plainLoad(func(r io.Reader) io.Reader { return r }), emptyN2},
		{&hashLoad, plainLoad(func(r io.Reader) io.Reader { return io.TeeReader(r, sha256.New()) }), emptyN2},
		{&xxhLoad, plainLoad(func(r io.Reader) io.Reader { return io.TeeReader(r, xxhash.New()) }), emptyN2},
		{&ourLoad, func() {
			res, err := image.Ensure(ctx, n2, cache, key, nil)
			timing.Check(err)
			if !res.Loaded {
				log.Fatal("Ensure did not load")
			}
		}, emptyN2},
	}
	// Each repetition runs the variants in another order (rotated), so that none always
	// runs first or last: on this machine the position alone shifts a load by ±0.3 s.
	rotated := func(vs []variant, r int) {
		for i := range vs {
			v := vs[(i+r)%len(vs)]
			v.prep()
			*v.times = append(*v.times, timing.Time(v.run))
		}
	}
	for r := 0; r < *reps; r++ {
		rotated(saves, r)
		rotated(loads, r)
		warm = append(warm, timing.Time(func() {
			res, err := image.Ensure(ctx, n2, cache, key, nil)
			timing.Check(err)
			if res.Loaded {
				log.Fatal("warm Ensure loaded")
			}
		}))
		os.Remove(raw)
		log.Printf("rep %d: save raw %v ours %v; load raw %v sha256 %v xxh64 %v ours %v; warm %v", r+1,
			rawSave[r].Round(time.Millisecond), ourSave[r].Round(time.Millisecond),
			rawLoad[r].Round(time.Millisecond), hashLoad[r].Round(time.Millisecond), xxhLoad[r].Round(time.Millisecond), ourLoad[r].Round(time.Millisecond),
			warm[r].Round(time.Microsecond))
	}
	engines.RemoveImage(n1, entry.ImageID)
	engines.RemoveImage(n2, entry.ImageID)
	ms, mo, ml, mh, mx, mol, mw := timing.Median(rawSave), timing.Median(ourSave), timing.Median(rawLoad), timing.Median(hashLoad), timing.Median(xxhLoad), timing.Median(ourLoad), timing.Median(warm)
	fmt.Printf("| %d MiB image, median of %d | raw | benchctl | ratio | target |\n|---|---|---|---|---|\n", *sizeMiB, *reps)
	fmt.Printf("| cold publish vs. docker save to a file | %.2f s | %.2f s | %.2f × | ≤ 1.1 × |\n", ms.Seconds(), mo.Seconds(), mo.Seconds()/ms.Seconds())
	fmt.Printf("| Ensure on an empty engine vs. docker load | %.2f s | %.2f s | %.2f × | ≤ 1.05 × |\n", ml.Seconds(), mol.Seconds(), mol.Seconds()/ml.Seconds())
	fmt.Printf("| docker load read through an inline XXH64 (the check Ensure makes) | %.2f s | %.2f s | %.2f × | — |\n", ml.Seconds(), mx.Seconds(), mx.Seconds()/ml.Seconds())
	fmt.Printf("| docker load read through an inline sha256 | %.2f s | %.2f s | %.2f × | — |\n", ml.Seconds(), mh.Seconds(), mh.Seconds()/ml.Seconds())
	fmt.Printf("| warm Ensure (image present) | — | %.1f ms | — | ≤ 0.5 s |\n", float64(mw.Microseconds())/1000)
}
