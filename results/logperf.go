package results

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
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
	// Ambiguous is set (to the text, e.g. "1,234") when the number is followed by a comma
	// and digits: a thousands separator or a decimal comma, which cannot be told apart.
	// Value, Unit and Metric are then not to be used.
	Ambiguous string
}

// ParseLogPerformance returns the last `performance: <value>[unit][,] <metric>` line of a
// log (the match is case-sensitive, as madengine's). Only the last 64 MiB of a larger log
// are searched. found is false when no line matches.
//
// The log must be a regular file, not a link (a FIFO is refused without blocking).
func ParseLogPerformance(path string) (res LogResult, found bool, err error) {
	f, err := safefile.OpenNoFollow(path)
	if err != nil {
		return res, false, err
	}
	defer f.Close()
	return parseLog(f, path)
}

// parseLogBeneath parses the log at rel inside a node folder (see safefile.OpenBeneath).
func parseLogBeneath(dir, rel string) (res LogResult, found bool, err error) {
	f, err := safefile.OpenBeneath(dir, rel)
	if err != nil {
		return res, false, err
	}
	defer f.Close()
	return parseLog(f, f.Name())
}

func parseLog(f *os.File, path string) (res LogResult, found bool, err error) {
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
	// A line longer than the buffer comes in pieces; the end of the previous piece is
	// searched again with the next one, so that a performance line cut by a piece boundary
	// is still read whole (the later, complete match wins).
	const overlap = 4 << 10
	var carry, buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if len(chunk) > 0 {
			cur := line + 1
			if !full {
				line++
			}
			text := chunk
			if len(carry) > 0 {
				buf = append(append(buf[:0], carry...), chunk...)
				text = buf
			}
			if bytes.Contains(text, key) {
				if m := perfLine.FindAllSubmatchIndex(text, -1); len(m) > 0 {
					res, found = logMatch(text, m[len(m)-1], cur), true
				}
			}
			carry = carry[:0]
			if full {
				carry = append(carry, text[max(0, len(text)-overlap):]...)
			}
		}
		switch {
		case err == nil, full:
		case err == io.EOF:
			return res, found, nil
		default:
			return res, found, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// logMatch turns a perfLine match (submatch indexes into text) into a LogResult.
func logMatch(text []byte, m []int, line int) LogResult {
	group := func(i int) string { return string(text[m[2*i]:m[2*i+1]]) }
	res := LogResult{Value: group(1), Unit: group(2), Metric: group(3), Line: line}
	if end := m[3]; m[5] == end && end+1 < len(text) && text[end] == ',' && text[end+1] >= '0' && text[end+1] <= '9' {
		digits := end + 1
		for digits < len(text) && text[digits] >= '0' && text[digits] <= '9' {
			digits++
		}
		res.Ambiguous = string(text[m[2]:digits])
	}
	if res.Metric == "" {
		res.Metric = res.Unit
	}
	return res
}

// logTable makes the one-row table of a log's performance line for benchmark name.
func logTable(name string, r LogResult) *Table {
	t := &Table{Header: []string{ColModel, ColPerformance, ColMetric}}
	// A log is not always UTF-8 (a Latin-1 "µs"); perf.csv must be.
	row := []string{name, r.Value, strings.ToValidUTF8(r.Metric, "\uFFFD")}
	if r.Unit != "" {
		t.Header = append(t.Header, ColUnit)
		row = append(row, strings.ToValidUTF8(r.Unit, "\uFFFD"))
	}
	t.Rows = [][]string{row}
	return t
}
