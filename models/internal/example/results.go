package example

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// ResultHeader is the madengine-compatible part of the results CSV header; a benchmark may
// add its own columns after it.
var ResultHeader = []string{"model", "performance", "metric", "status", "node_rank", "nnodes"}

// Result is one row of the results CSV.
type Result struct {
	Model       string
	Performance string // already formatted
	Metric      string
	Status      string   // SUCCESS or FAILURE
	Extra       []string // values of the benchmark's own columns
}

// WriteResults writes the rows, with the header and the extra columns, to name in the
// output folder e.OutputDir (the current folder, said on stderr, when it is unset). It
// returns the path written.
func WriteResults(e NodeEnv, name string, extraCols []string, rows []Result, stderr io.Writer) (string, error) {
	dir := e.OutputDir
	if dir == "" {
		dir = "."
		fmt.Fprintf(stderr, "BENCHCTL_OUTPUT_DIR is not set: writing %s into the current directory\n", name)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("BENCHCTL_OUTPUT_DIR: %w", err)
	}
	records := [][]string{append(append([]string{}, ResultHeader...), extraCols...)}
	for _, r := range rows {
		rec := []string{r.Model, r.Performance, r.Metric, r.Status, strconv.Itoa(e.Rank), strconv.Itoa(e.NNodes)}
		records = append(records, append(rec, r.Extra...))
	}
	path := filepath.Join(dir, name)
	if err := writeCSVAtomic(path, records); err != nil {
		return "", fmt.Errorf("writing results: %w", err)
	}
	return path, nil
}

// writeCSVAtomic writes records to a temporary file beside path and renames it over path,
// so a reader never sees a half-written file.
func writeCSVAtomic(path string, records [][]string) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = csv.NewWriter(f).WriteAll(records); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
