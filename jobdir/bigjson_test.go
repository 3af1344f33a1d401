package jobdir

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A co-writer plants a status.json or job.json within the 16 MiB cap made of millions of
// empty objects: reading it must be refused in bounded memory (encoding/json took 4.3 GB
// for 16 MiB of `{},`), naming the file.
func TestTinyValuesCannotExhaustAReader(t *testing.T) {
	dir := t.TempDir()
	docs := map[string][]byte{
		"status.json": append([]byte(`{"version":1,"benchmarks":[`), append(bytes.Repeat([]byte(`{},`), (MaxStatusSize-64)/3), `{}]}`...)...),
		"job.json":    append([]byte(`{"version":3,"nodes":[`), append(bytes.Repeat([]byte(`"",`), (MaxStatusSize-64)/3), `""]}`...)...),
		"deep.json":   append([]byte(`{"version":1,"benchmarks":`), append(bytes.Repeat([]byte(`[`), 1<<20), append(bytes.Repeat([]byte(`]`), 1<<20), '}')...)...),
	}
	for name, data := range docs {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var err error
		if name == "job.json" {
			_, err = ReadJob(p)
		} else {
			_, err = ReadStatus(p)
		}
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want a refusal naming the file", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Errorf("%s: reading it allocated %d MiB", name, alloc>>20)
		}
	}
}
