package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest/document"
)

// A catalog under the 64 MiB cap is read in bounded memory and time, whatever it holds:
// refused with an error that names the file, the line, the limit and what to do, or read.
// (A 3 MB list of empty objects took 1.3 GB and printed 2 million problems; 60 MB was
// killed at 24 GB.) The bound is on all the bytes allocated (TotalAlloc), which bounds the
// peak heap from above.
func TestHostileCatalogsAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 60 MB files")
	}
	const big = 60 << 20
	keys := func(n int) string {
		var b strings.Builder
		b.WriteString("[{")
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":1`, i)
		}
		b.WriteString("}]")
		return b.String()
	}
	var models strings.Builder // valid models with long args, up to the size of big
	models.WriteString("[")
	for i := 0; models.Len() < big-9000; i++ {
		if i > 0 {
			models.WriteString(",\n")
		}
		fmt.Fprintf(&models, `{"name": "m%d", "dockerfile": "docker/x", "scripts": "run.sh", "tags": ["a", "t%d"], "args": "--x %s"}`, i, i%10, strings.Repeat("a", 8000))
	}
	models.WriteString("]")
	cases := []struct {
		name, body string
		want       []string // in the error; none: the catalog is valid
	}{
		{"3 MB of empty objects", "[" + strings.Repeat("{},", 1_000_000) + "{}]", []string{"models.json:1: more than 200000 values", "split it"}},
		{"60 MB of empty objects", "[" + strings.Repeat("{},", big/3) + "{}]", []string{"models.json:1: more than 200000 values"}},
		{"100,000 deep", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), []string{"models.json:1: nested more than 64 levels deep"}},
		{"one 60 MB string", `[{"name": "` + strings.Repeat("x", big) + `"}]`, []string{"models.json:1: a value of 62914560 bytes: one value may be at most 1 MiB"}},
		{"a million keys", keys(1_000_000), []string{"models.json:1: more than 200000 values"}},
		{"60 MB of newlines", strings.Repeat("\n", big) + "[]", []string{"models.json:1: 62914560 bytes of blank space"}},
		{"99,999 empty models", "[" + strings.Repeat("{},\n", 99_998) + "{}]", []string{"models.json:1: [0].name: is required", "… and 199898 more problems"}},
		{"60 MB of models", models.String(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.body) > MaxCatalogSize {
				t.Fatalf("the test's catalog is %d bytes, over the cap", len(c.body))
			}
			path := filepath.Join(t.TempDir(), "models.json")
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			cat, err := Load(path)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("allocated %d MiB, over 256 MiB", alloc>>20)
			}
			// Not a speed assertion: "it ends" (a quadratic pass took hours), which go test's
			// -timeout catches. Under the race detector on a busy 2-core machine the valid
			// 60 MB catalog takes a minute.
			t.Logf("took %v", took)
			if c.want == nil {
				if err != nil || len(cat.Models) < 7000 {
					t.Fatalf("a valid catalog: %v", err)
				}
				return
			}
			var me *document.Error
			if !errors.As(err, &me) || !me.InvalidInput() {
				t.Fatalf("got %v, want an invalid-catalog error", err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q:\n%s", w, msg[:min(len(msg), 1500)])
				}
			}
			if len(msg) > 20000 {
				t.Errorf("a %d-byte error message", len(msg))
			}
		})
	}
}

// Unknown keys are kept with a warning each: the first document.MaxProblems, and a count.
func TestCatalogWarningsAreCounted(t *testing.T) {
	body := "[" + strings.Repeat(`{"name": "m", "scripts": "s", "x": 1, "y": 2},`, 1) + "\n"
	for i := range 300 {
		body += fmt.Sprintf(`{"name": "m%d", "scripts": "s", "x": 1},`, i) + "\n"
	}
	body = strings.TrimSuffix(body, ",\n") + "]"
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != document.MaxProblems+1 || !strings.HasSuffix(c.Warnings[document.MaxProblems], "… and 202 more warnings") {
		t.Fatalf("%d warnings, last %q", len(c.Warnings), c.Warnings[len(c.Warnings)-1])
	}
}
