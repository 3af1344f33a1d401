package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/image"
)

// Every long command stops promptly on SIGINT and SIGTERM, with the shell's code for the
// signal (128+n). Each input takes seconds to go through (validation before it was linear
// took minutes), the signal comes 200 ms after the start (startDelay), and the process must
// be gone within 2 s of it.
func TestLongCommandsStopOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("writes large inputs")
	}
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
	}{
		{"validate", []string{"validate", "--manifest", bigManifest(t, dir)}},
		{"models list", []string{"models", "list", "--catalog", bigCatalog(t, dir)}},
		{"collect", []string{"collect", "9000001", "--shared-dir", bigJob(t, dir)}},
		{"cache verify", []string{"cache", "verify", "--shared-dir", bigCacheEntry(t, dir)}},
	}
	for _, c := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(c.name+"/"+signalNames[sig], func(t *testing.T) {
				cmd := benchctlProcess(t, c.args...)
				var stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = nil, &stderr
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					t.Fatalf("%s ended after %v, before the signal (%v): make its input larger; stderr:\n%s", c.name, time.Since(start), err, tail(stderr.String(), 2000))
				case <-time.After(startDelay):
				}
				sent := time.Now()
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				var err error
				select {
				case err = <-done:
				case <-time.After(5 * time.Second):
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("%s still ran 5 s after %v; stderr:\n%s", c.name, sig, tail(stderr.String(), 2000))
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("%s after %v: %v, want exit %d", c.name, sig, err, 128+int(sig))
				}
				if got, want := ee.ExitCode(), 128+int(sig); got != want {
					t.Fatalf("%s after %v: exit %d, want %d; stderr:\n%s", c.name, sig, got, want, tail(stderr.String(), 2000))
				}
				if !strings.Contains(stderr.String(), "interrupted by "+signalNames[sig]) {
					t.Errorf("stderr does not say which signal stopped it:\n%s", tail(stderr.String(), 2000))
				}
				t.Logf("stopped %v after the signal", time.Since(sent))
			})
		}
	}
}

// startDelay is how long a command runs before the signal: 200 ms, or a second under the
// race detector, whose binary takes longer than 200 ms to start on a loaded machine (a signal
// before benchctl listens for it kills it).
var startDelay = map[bool]time.Duration{false: 200 * time.Millisecond, true: time.Second}[raceEnabled]

var signalNames = map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bigManifest is a manifest of 40,000 benchmarks, each with two problems (so that every one
// is reported): within the limits, and seconds of work (minutes when validation was
// quadratic).
func bigManifest(t *testing.T, dir string) string {
	var b strings.Builder
	b.WriteString(`{"name": "big", "image": {"ref": "busybox"}, "gpu": {"vendor": "none"}, "benchmarks": [`)
	for i := range 40000 {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"name": "bench-%d", "command": "run %d", "timeout": "never"}`, i, i)
	}
	b.WriteString("]}\n")
	return writeFile(t, filepath.Join(dir, "big.json"), []byte(b.String()))
}

// bigCatalog is a models.json just under the 64 MiB cap: valid models with long args.
func bigCatalog(t *testing.T, dir string) string {
	return writeStream(t, filepath.Join(dir, "models.json"), func(w *bufio.Writer) {
		w.WriteString("[")
		for i := range 7700 {
			if i > 0 {
				w.WriteString(",\n")
			}
			fmt.Fprintf(w, `{"name": "model_%d", "dockerfile": "docker/x", "scripts": "scripts/run.sh", "n_gpus": "8", "tags": ["big", "t%d"], "args": "--flag %s"}`,
				i, i%10, strings.Repeat("a", 8000))
		}
		w.WriteString("]")
	})
}

// bigJob is a shared directory with a synthetic job of many nodes and long results CSVs.
func bigJob(t *testing.T, dir string) string {
	shared := filepath.Join(dir, "shared-job")
	if _, err := synth.WriteJob(shared, synth.Options{Nodes: 256, Benchmarks: 4, Rows: 4000}); err != nil {
		t.Fatal(err)
	}
	return shared
}

// bigCacheEntry is a shared directory whose cache holds one 8 GiB entry (a sparse file:
// it takes no disk, but reading it to check its sha256 takes seconds).
func bigCacheEntry(t *testing.T, dir string) string {
	shared := filepath.Join(dir, "shared-cache")
	key := strings.Repeat("ab", 32)
	cache := image.CacheLayout{Shared: shared}.Dir()
	tar := writeFile(t, filepath.Join(cache, key+".tar"), nil)
	if err := os.Truncate(tar, 8<<30); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cache, key+".tar.sha256"), []byte(strings.Repeat("0", 64)+"  "+key+".tar\n"))
	meta, _ := json.Marshal(map[string]any{"version": 1, "key": key, "imageId": "sha256:" + strings.Repeat("1", 64),
		"tags": []string{"big:1"}, "size": 8 << 30, "builder": "test", "created": time.Now()})
	writeFile(t, filepath.Join(cache, key+".json"), meta)
	return shared
}
