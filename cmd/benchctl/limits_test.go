package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

// maxRSS is the most memory benchctl may use reading any catalog or manifest within the
// size caps (its peak resident set).
const maxRSS = 256 << 20

// A hostile catalog or manifest within the size caps is refused with exit 4 and a clear
// message (file, line, the limit, what to do), within the memory bound. (A 3 MB catalog
// of empty objects took 1.3 GB and printed 2 million problems; 60 MB was killed at 24 GB.)
func TestHostileInputsExitFourInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 60 MB files")
	}
	dir := t.TempDir()
	const big = 60 << 20
	// The files are written as streams: this process stays small, for a child's peak
	// resident set counts its parent's at the fork (Linux keeps it across exec).
	file := func(name string, parts ...func(w *bufio.Writer)) string {
		return writeStream(t, filepath.Join(dir, name), parts...)
	}
	text := func(s string) func(w *bufio.Writer) { return func(w *bufio.Writer) { w.WriteString(s) } }
	times := func(s string, n int) func(w *bufio.Writer) {
		return func(w *bufio.Writer) {
			for range n {
				w.WriteString(s)
			}
		}
	}
	keys := func(w *bufio.Writer) {
		for i := range 1_000_000 {
			fmt.Fprintf(w, `"k%d":1,`, i)
		}
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"3 MB catalog of empty objects", []string{"models", "list", "--catalog", file("3m.json", text("["), times("{},", 1_000_000), text("{}]"))},
			[]string{"invalid catalog: ", "3m.json:1: more than 200000 values", "split it into smaller files"}},
		{"60 MB catalog of empty objects", []string{"models", "list", "--catalog", file("60m.json", text("["), times("{},", big/3), text("{}]"))},
			[]string{"60m.json:1: more than 200000 values"}},
		{"a catalog 100,000 deep", []string{"models", "list", "--catalog", file("deep.json", times("[", 100000), times("]", 100000))},
			[]string{"deep.json:1: nested more than 64 levels deep"}},
		{"a 60 MB string", []string{"models", "list", "--catalog", file("str.json", text(`[{"name": "`), times("x", big), text(`"}]`))},
			[]string{"str.json:1: a value of 62914560 bytes: one value may be at most 1 MiB"}},
		{"a million keys", []string{"models", "list", "--catalog", file("keys.json", text("[{"), keys, text(`"k": 1}]`))},
			[]string{"keys.json:1: more than 200000 values"}},
		{"40,000 bad benchmarks", []string{"validate", "--manifest", file("bench.json", text(`{"name": "x", "image": {"ref": "busybox"}, "gpu": {"vendor": "none"}, "benchmarks": [`),
			times(`{"name": "b", "command": "run"},`+"\n", 39999), text(`{"name": "b", "command": "run"}]}`))},
			[]string{"bench.json: 79999 problems:", "bench.json:1: benchmarks[0].command: must be a list", "… and 79899 more problems"}},
		{"a manifest 100,000 deep", []string{"validate", "--manifest", file("deep.yaml", times("[", 100000), times("]", 100000))},
			[]string{"deep.yaml"}},
		{"a manifest of numbers", []string{"validate", "--manifest", file("nums.yaml", text("["), times("1,", 2<<20-8), text("1]"))},
			[]string{"nums.yaml:1: more than 200000 values"}},
	}
	debug.FreeOSMemory()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := benchctlProcess(t, c.args...)
			var stdout, stderr capped // so that a flood of output does not grow this process
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 4 {
				t.Fatalf("%v, want exit 4; stderr:\n%s", err, tail(stderr.String(), 2000))
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, tail(stderr.String(), 2000))
				}
			}
			if stderr.n > 30000 || stdout.n > 0 {
				t.Errorf("%d bytes on stderr, %d on stdout", stderr.n, stdout.n)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
			if !raceEnabled && rss > maxRSS {
				t.Errorf("peak memory %d MiB, over %d MiB", rss>>20, maxRSS>>20)
			}
			t.Logf("peak memory %d MiB", rss>>20)
		})
	}
}

// writeStream writes the parts to path one after the other, through a small buffer.
func writeStream(t *testing.T, path string, parts ...func(w *bufio.Writer)) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for _, p := range parts {
		p(w)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// capped keeps the first 64 KiB written to it and counts all.
type capped struct {
	bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	c.n += len(p)
	if room := 64<<10 - c.Buffer.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
