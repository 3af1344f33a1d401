// Package judge judges a benchmark that ran to its end by what it printed and wrote: the
// manifest's success patterns on its output, and its figures of merit (manifest/figures),
// whose rows it writes as the benchmark's results CSV. The runner asks it after a benchmark
// exits 0.
package judge

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"strings"

	"github.com/benchctl/benchctl/internal/atomicfile"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/figures"
)

// figureColumns are the row-key columns results already knows (results.DefaultKeyColumns)
// that the built-in parsers give: a row's key part of that name goes in its own column; the
// others (a pattern's groups, nccl-tests' type and redop) in figures.KeyColumn.
var figureColumns = []string{"size_bytes", "message_size", "problem"}

// Output judges a benchmark that ran to its end by its output (logPath: its log, the
// process's stdout and stderr) and the files it left in its results folder (run: its run
// name): success's patterns first, then each figure, whose rows are written to
// figures.ResultsFile in the results folder. It returns why the benchmark fails; "" when it
// passes.
func Output(nf *jobdir.NodeFolder, nd jobdir.NodeDir, run string, b manifest.Benchmark, logPath string) (string, error) {
	if b.Success != nil {
		f, err := safefile.OpenNoFollow(logPath)
		if err != nil {
			return "", fmt.Errorf("reading the benchmark's output for success: %w", err)
		}
		why, err := b.Success.Judge(f)
		f.Close()
		if err != nil || why != "" {
			return why, err
		}
	}
	if len(b.Figures) == 0 {
		return "", nil
	}
	var rows []figures.Row
	for _, s := range b.Figures {
		var f *os.File
		var err error
		if s.Source() == figures.FromStdout {
			f, err = safefile.OpenNoFollow(logPath)
		} else {
			f, err = safefile.OpenBeneath(nd.Results(run), s.Source())
		}
		if err != nil {
			return fmt.Sprintf("figure %s: %s cannot be read: %v", s.Name(), s.Source(), err), nil
		}
		got, err := figures.Read(s, f)
		f.Close()
		if err != nil {
			return fmt.Sprintf("figure %s: %v in %s (narrow the pattern)", s.Name(), err, s.Source()), nil
		}
		if why := s.Verdict(got); why != "" {
			return why, nil
		}
		rows = append(rows, got...)
	}
	return "", writeFigures(nf, run, b.Name, rows)
}

// writeFigures writes rows as the results CSV of run (model, performance, metric, unit,
// the key columns the rows use), through the node folder, never through a link.
func writeFigures(nf *jobdir.NodeFolder, run, model string, rows []figures.Row) error {
	used := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.Key {
			used[column(p.Name)] = true
		}
	}
	header := []string{"model", "performance", "metric", "unit"}
	for _, c := range append(figureColumns, figures.KeyColumn) {
		if used[c] {
			header = append(header, c)
		}
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(header)
	for _, r := range rows {
		cells := map[string]string{"model": model, "performance": r.Text, "metric": r.Metric, "unit": r.Unit}
		var rest []string
		for _, p := range r.Key {
			if c := column(p.Name); c != figures.KeyColumn {
				cells[c] = p.Value
			} else {
				rest = append(rest, p.Name+"="+p.Value)
			}
		}
		cells[figures.KeyColumn] = strings.Join(rest, " ")
		rec := make([]string, len(header))
		for i, h := range header {
			rec[i] = textsafe.Cell(cells[h])
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	d, err := nf.MkdirAll(jobdir.ResultsRel(run), 0o755)
	if err != nil {
		return fmt.Errorf("writing %s: %w", figures.ResultsFile, err)
	}
	defer d.Close()
	if err := atomicfile.WriteFileAt(d, figures.ResultsFile, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", figures.ResultsFile, err)
	}
	return nil
}

func column(name string) string {
	for _, c := range figureColumns {
		if c == name {
			return c
		}
	}
	return figures.KeyColumn
}
