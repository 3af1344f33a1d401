package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
)

// MaxLogScan is how much of the end of a benchmark log is searched for a performance line.
const MaxLogScan = 64 << 20

// ColUnit is the column that keeps the unit of a value read from a log line ("/s").
const ColUnit = "performance_unit"

// perfLine matches madengine's single-result line, e.g.
//
//	performance: 14164/s, samples_per_second
//	performance: 1234.5 samples_per_second
//
// Group 1 is the number as written, group 2 a unit glued to it ("/s", "GB/s"), group 3 the
// metric after optional spaces and a comma.
var perfLine = regexp.MustCompile(`performance:\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)([^\s,]*)[\s,]*([^\s,]*)`)

// LogResult is the value of the last performance line of a log.
type LogResult struct {
	Value  string // the number exactly as written
	Unit   string // glued to the number, e.g. "/s"; may be empty
	Metric string // the word after it; the unit when the line names no metric
	Line   int    // line number in the part of the log that was read (1-based)
}

// ParseLogPerformance returns the last `performance: <value>[unit][,] <metric>` line of a
// log (the match is case-sensitive, as madengine's). Only the last 64 MiB of a larger log
// are searched. found is false when no line matches.
func ParseLogPerformance(path string) (res LogResult, found bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return res, false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if st, err := f.Stat(); err == nil && st.Size() > MaxLogScan {
		if _, err := f.Seek(st.Size()-MaxLogScan, io.SeekStart); err != nil {
			return res, false, fmt.Errorf("reading %s: %w", path, err)
		}
		br.Reset(f)
		if _, err := br.ReadBytes('\n'); err != nil { // drop the partial first line
			return res, false, nil
		}
	}
	key := []byte("performance:")
	line := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			cur := line + 1
			if !errors.Is(err, bufio.ErrBufferFull) {
				line++
			}
			if bytes.Contains(chunk, key) {
				if m := perfLine.FindAllSubmatch(chunk, -1); len(m) > 0 {
					last := m[len(m)-1]
					res = LogResult{Value: string(last[1]), Unit: string(last[2]), Metric: string(last[3]), Line: cur}
					if res.Metric == "" {
						res.Metric = res.Unit
					}
					found = true
				}
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			return res, found, nil
		default:
			return res, found, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// logTable makes the one-row table of a log's performance line for benchmark name.
func logTable(name string, r LogResult) *Table {
	t := &Table{Header: []string{ColModel, ColPerformance, ColMetric}}
	row := []string{name, r.Value, r.Metric}
	if r.Unit != "" {
		t.Header = append(t.Header, ColUnit)
		row = append(row, r.Unit)
	}
	t.Rows = [][]string{row}
	return t
}
