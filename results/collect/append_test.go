package collect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/benchctl/benchctl/results"
)

func TestAppendCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.csv")
	first := &results.Table{Header: []string{"model", "performance", "a"}, Rows: [][]string{{"m1", "1.50", "x"}}}
	second := &results.Table{Header: []string{"model", "b", "performance"}, Rows: [][]string{{"m2", "y", "007"}}}
	ctx := context.Background()
	if err := AppendCSV(ctx, path, first); err != nil {
		t.Fatal(err)
	}
	if err := AppendCSV(ctx, path, second); err != nil {
		t.Fatal(err)
	}
	got, err := results.ReadCSVFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := &results.Table{Header: []string{"model", "performance", "a", "b"}, Rows: [][]string{{"m1", "1.50", "x", ""}, {"m2", "007", "", "y"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestAppendCSVRefusesNonCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.csv")
	junk := []byte("\x00\x01binary")
	os.WriteFile(path, junk, 0o644)
	if err := AppendCSV(context.Background(), path, &results.Table{Header: []string{"model", "performance"}}); err == nil {
		t.Fatal("appended to a binary file")
	}
	if data, _ := os.ReadFile(path); string(data) != string(junk) {
		t.Fatal("the file was changed")
	}
}

// Concurrent collects appending to one perf.csv lose no rows.
func TestAppendCSVConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "perf.csv")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			col := fmt.Sprintf("c%d", i%3)
			errs <- AppendCSV(context.Background(), path, &results.Table{Header: []string{"model", "performance", col}, Rows: [][]string{{fmt.Sprint("m", i), "1", "v"}}})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := results.ReadCSVFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != n || len(got.Header) != 5 {
		t.Fatalf("%d rows, header %q", len(got.Rows), got.Header)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range ents {
		if e.Name() != "perf.csv" && e.Name() != "perf.csv.lock" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
