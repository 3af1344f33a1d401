package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest/document"
)

// FuzzParse feeds arbitrary bytes to the manifest reader as YAML and as JSON: it must never
// panic, and every failure must be a located *Error.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/good.yaml", "testdata/good.json"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("{"))
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte("<<: {name: x}\n"))
	f.Add([]byte("\ufeff{\"name\": 1e999}"))
	f.Add([]byte("name: t\nimage: {ref: busybox}\nbenchmarks: [{name: b, command: [x], timeout: -5s}]\n"))
	dir, _ := filepath.Abs("testdata")
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"fuzz.yaml", "fuzz.json"} {
			m, _, err := Parse(name, filepath.Join(dir, name), data, Options{Lookup: env("X", "1")})
			if err == nil {
				if m == nil || m.Name == "" || len(m.Benchmarks) == 0 {
					t.Fatalf("accepted without name or benchmarks: %+v", m)
				}
				continue
			}
			e, ok := err.(*document.Error)
			if !ok {
				t.Fatalf("%s: error is %T, not *Error: %v", name, err, err)
			}
			for _, p := range e.Problems {
				if p.Msg == "" || !strings.HasPrefix(p.String(), name) {
					t.Fatalf("%s: unlocated problem %+v", name, p)
				}
			}
		}
	})
}
