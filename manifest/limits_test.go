package manifest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest/document"
)

// maxAlloc is the most a parse of any document within the size caps may allocate in all
// (runtime.MemStats.TotalAlloc, an upper bound of the peak heap, and exact where a sampled
// peak is not).
const maxAlloc = 256 << 20

// allocated runs f and returns the bytes it allocated and how long it took.
func allocated(f func()) (uint64, time.Duration) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// repeat joins n copies of item with sep inside open and close.
func repeat(open, item, sep, close string, n int) string {
	var b strings.Builder
	b.Grow(len(open) + n*(len(item)+len(sep)) + len(close))
	b.WriteString(open)
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(item)
	}
	b.WriteString(close)
	return b.String()
}

// Hostile documents just under the manifest's 4 MiB cap are refused (or read) in bounded
// memory and time, with an error that names the file, the line, the limit and what to do.
func TestHostileManifestsAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("parses large documents")
	}
	const size = MaxFileSize - 64
	var keys, keysYAML, bench strings.Builder
	keys.WriteString(`{"name": "k"`)
	for i := 0; keys.Len() < size-20; i++ {
		fmt.Fprintf(&keys, `,"k%d":1`, i)
	}
	keys.WriteString("}")
	for i := 0; keysYAML.Len() < size-20; i++ {
		fmt.Fprintf(&keysYAML, "k%d: 1\n", i)
	}
	bench.WriteString(`{"name": "many", "image": {"ref": "busybox"}, "gpu": {"vendor": "none"}, "benchmarks": [`)
	for i := range 40000 {
		if i > 0 {
			bench.WriteString(",\n")
		}
		fmt.Fprintf(&bench, `{"name": "b%d", "command": ["true"]}`, i)
	}
	bench.WriteString("]}")
	cases := []struct {
		name, file, body string
		want             []string // in the error; none: the manifest is valid
	}{
		{"40,000 benchmarks", "m.json", bench.String(), nil},
		{"empty objects", "m.json", repeat("[", "{}", ",", "]", size/3), []string{"m.json:1: more than 200000 values", "split it"}},
		{"empty mappings", "m.yaml", repeat("[", "{}", ",", "]", size/3), []string{"m.yaml:1: more than 200000 values", "split it"}},
		{"a list of numbers", "m.yaml", repeat("[", "1", ",", "]", size/2), []string{"m.yaml:1: more than 200000 values"}},
		{"a block list", "m.yaml", repeat("", "- {}", "\n", "\n", size/5), []string{"more than 200000 values"}},
		{"100,000 deep", "m.json", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), []string{"m.json:1: nested more than 64 levels deep"}},
		{"100,000 deep YAML", "m.yaml", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), []string{"m.yaml", "depth"}},
		{"one long string", "m.json", `{"name": "` + strings.Repeat("x", size-20) + `"}`, []string{"m.json:1: a value of", "at most 1 MiB"}},
		{"one long YAML string", "m.yaml", "\n\nname: " + strings.Repeat("x", size-20) + "\n", []string{"m.yaml:3: a value of", "at most 1 MiB"}},
		{"one long key", "m.yaml", "name: x\n? " + strings.Repeat("k", 1<<20+1) + "\n: 1\n", []string{"m.yaml:2: a value of", "at most 1 MiB"}},
		{"a long number", "m.json", `{"name": ` + strings.Repeat("9", size-20) + `}`, []string{"m.json:1: a value of"}},
		{"blank lines", "m.json", strings.Repeat("\n", size-10) + `{}`, []string{"m.json:1:", "bytes of blank space"}},
		{"a key per value", "m.json", keys.String(), []string{"m.json:1: more than 200000 values"}},
		{"a YAML key per line", "m.yaml", keysYAML.String(), []string{"more than 200000 values"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.body) > MaxFileSize {
				t.Fatalf("the test's document is %d bytes, over the cap", len(c.body))
			}
			path := writeManifest(t, c.file, c.body)
			var err error
			alloc, took := allocated(func() { _, _, err = Load(path, Options{}) })
			if alloc > maxAlloc {
				t.Errorf("allocated %d MiB, over %d MiB", alloc>>20, maxAlloc>>20)
			}
			t.Logf("took %v", took) // it ends (go test's -timeout catches a hang); not a speed assertion
			var me *document.Error
			if c.want == nil {
				if err != nil {
					t.Fatalf("a valid manifest: %v", tail(err.Error()))
				}
				return
			}
			if !errors.As(err, &me) || !me.InvalidInput() {
				t.Fatalf("got %v, want an invalid-manifest error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%s", w, tail(err.Error()))
				}
			}
			if len(err.Error()) > 2000 {
				t.Errorf("a %d-byte error message", len(err.Error()))
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 1000 {
		return s[:1000] + "…"
	}
	return s
}

// A manifest with a problem in each of 66,000 benchmarks reports the first MaxProblems (by
// line) and counts the others; checking it is linear (it was quadratic: every problem
// scanned all those before it, minutes for this file).
func TestManyProblemsAreCountedNotListed(t *testing.T) {
	if testing.Short() {
		t.Skip("checks a large manifest")
	}
	var b strings.Builder
	b.WriteString(`{"name": "bad", "image": {"ref": "busybox"}, "gpu": {"vendor": "none"}, "benchmarks": [`)
	const n = 66000
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"name": "b%d", "command": "run %d"}`, i, i)
	}
	b.WriteString("]}")
	path := writeManifest(t, "m.json", b.String())
	var err error
	_, took := allocated(func() { _, _, err = Load(path, Options{}) })
	var me *document.Error
	if !errors.As(err, &me) {
		t.Fatalf("got %v", err)
	}
	if len(me.Problems) != document.MaxProblems || me.More != n-document.MaxProblems {
		t.Fatalf("kept %d problems and counted %d more, want %d and %d", len(me.Problems), me.More, document.MaxProblems, n-document.MaxProblems)
	}
	for i, p := range me.Problems {
		if p.Line != i+1 || p.Path != fmt.Sprintf("benchmarks[%d].command", i) {
			t.Fatalf("problem %d is %s, want the one of line %d", i, p, i+1)
		}
	}
	msg := err.Error()
	if !strings.Contains(msg, fmt.Sprintf("%d problems:", n)) || !strings.HasSuffix(msg, fmt.Sprintf("… and %d more problems (the first %d are shown: fix them and run again)", n-document.MaxProblems, document.MaxProblems)) {
		t.Errorf("message:\n%s", msg[len(msg)-min(len(msg), 500):])
	}
	t.Logf("took %v", took) // seconds under -race, hours when quadratic: go test's -timeout catches that
}

// A parse stops when its context ends, with the context's cause.
func TestParseStopsWhenCancelled(t *testing.T) {
	cause := errors.New("interrupted by SIGTERM")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	for _, name := range []string{"m.json", "m.yaml"} {
		body := repeat(`{"name": "x", "benchmarks": [`, `{"name": "b", "command": ["true"]}`, ",\n", "]}", 10000)
		path := writeManifest(t, name, body)
		if _, _, err := Load(path, Options{Context: ctx}); !errors.Is(err, cause) {
			t.Errorf("%s: got %v, want the context's cause", name, err)
		}
	}
}

// Images groups benchmarks by their image settings in one pass (it compared every image
// with every other: 40,000 benchmarks of their own images took seconds), and two images
// share a group only when every setting is equal.
func TestImagesGroupsByEverySetting(t *testing.T) {
	if n := reflect.TypeFor[Image]().NumField(); n != 9 {
		t.Fatalf("Image has %d fields: make imageKey (and this test) cover the new ones", n)
	}
	if n := reflect.TypeFor[EnvVar]().NumField(); n != 3 {
		t.Fatalf("EnvVar has %d fields: make imageKey (and this test) cover the new ones", n)
	}
	base := Image{Dockerfile: "D", Context: "c", Target: "t", Platform: "p", Tag: "g", Ref: "r", Pull: "always", PullSecret: "s",
		BuildArgs: []EnvVar{{Name: "A", Value: "1"}}}
	variants := []func(*Image){
		func(i *Image) { i.Dockerfile = "D2" }, func(i *Image) { i.Context = "c2" }, func(i *Image) { i.Target = "t2" },
		func(i *Image) { i.Platform = "p2" }, func(i *Image) { i.Tag = "g2" }, func(i *Image) { i.Ref = "r2" },
		func(i *Image) { i.Pull = "never" }, func(i *Image) { i.PullSecret = "s2" },
		func(i *Image) { i.BuildArgs = []EnvVar{{Name: "A", Value: "2"}} },
		func(i *Image) { i.BuildArgs = []EnvVar{{Name: "A", Value: "1", Secret: true}} },
		func(i *Image) { i.BuildArgs = nil },
		func(i *Image) { i.Dockerfile, i.Context = "Dc", "" }, // the same letters, split otherwise
	}
	m := &Manifest{Image: base}
	benches := []Benchmark{{Name: "base"}, {Name: "same", Image: &Image{}}}
	*benches[1].Image = base
	for i, v := range variants {
		img := base
		v(&img)
		benches = append(benches, Benchmark{Name: fmt.Sprint("v", i), Image: &img})
	}
	uses := m.Images(benches)
	if len(uses) != 1+len(variants) || !reflect.DeepEqual(uses[0].Benchmarks, []string{"base", "same"}) {
		t.Fatalf("%d groups, first %v", len(uses), uses[0].Benchmarks)
	}
	many := make([]Benchmark, 40000)
	for i := range many {
		many[i] = Benchmark{Name: fmt.Sprint("b", i), Image: &Image{Ref: fmt.Sprintf("img:%d", i/2)}}
	}
	uses = m.Images(many) // how long it takes is BenchmarkImages40000's to measure
	if len(uses) != 20000 || !reflect.DeepEqual(uses[19999].Benchmarks, []string{"b39998", "b39999"}) {
		t.Fatalf("%d groups", len(uses))
	}
}

// BenchmarkImages40000 measures Images over 40,000 benchmarks of 20,000 images (ms/op):
// one pass, where comparing every image with every other took seconds.
//
//	go test ./manifest -run '^$' -bench Images40000
func BenchmarkImages40000(b *testing.B) {
	m := &Manifest{}
	many := make([]Benchmark, 40000)
	for i := range many {
		many[i] = Benchmark{Name: fmt.Sprint("b", i), Image: &Image{Ref: fmt.Sprintf("img:%d", i/2)}}
	}
	for b.Loop() {
		if uses := m.Images(many); len(uses) != 20000 {
			b.Fatalf("%d groups", len(uses))
		}
	}
}
