package results

// Benchmark CSVs are parsed with encoding/csv rather than gocsv: their columns are not known
// in advance (madengine's plus any a benchmark adds, all of which must be kept in order),
// and every value must stay the exact text the benchmark wrote. gocsv maps known columns
// onto struct fields, so it would need wrapper types for every column and would still drop
// or re-format the unknown ones.

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/safefile"
)

// MaxCSVSize is the largest results CSV read (64 MiB); a larger one is a problem, not a crash.
const MaxCSVSize = 64 << 20

// CSVError is a results CSV that cannot be used: empty, too large, not text, ragged, or
// without a performance column.
type CSVError struct {
	Path string
	Line int // 0 when not about a line
	Msg  string
}

func (e *CSVError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

// ReadCSVFile reads and parses a results CSV of at most limit bytes (MaxCSVSize when limit
// is 0). See ParseCSV.
func ReadCSVFile(path string, limit int64) (*Table, error) {
	if limit <= 0 {
		limit = MaxCSVSize
	}
	var r safefile.Reader
	data, err := r.ReadNoFollow(path, limit)
	return csvOf(path, data, err, limit)
}

// readCSVBeneath reads a results CSV at rel inside a node folder: no link on the way may
// lead out of it (see safefile.OpenBeneath).
func readCSVBeneath(r *safefile.Reader, dir, rel string, limit int64) (*Table, error) {
	data, err := r.ReadBeneath(dir, rel, limit)
	return csvOf(filepath.Join(dir, rel), data, err, limit)
}

func csvOf(path string, data []byte, err error, limit int64) (*Table, error) {
	var tl *safefile.TooLargeError
	if errors.As(err, &tl) {
		return nil, &CSVError{Path: path, Msg: fmt.Sprintf("larger than the %d MiB limit", limit>>20)}
	}
	if err != nil {
		return nil, err
	}
	return ParseCSV(path, data)
}

// ParseCSV parses a results CSV. Header names are trimmed (a UTF-8 byte order mark is
// dropped), their case kept; an empty header name becomes column_<n>. Values are kept
// exactly as written. Blank lines are skipped. The file must be UTF-8 text, every row must
// have as many fields as the header, and there must be a performance column (matched
// case-insensitively); anything else is a *CSVError. name is only used in errors.
func ParseCSV(name string, data []byte) (*Table, error) { return parseCSV(name, data, true) }

func parseCSV(name string, data []byte, needPerformance bool) (*Table, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &CSVError{Path: name, Msg: "empty file: no header and no rows"}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, &CSVError{Path: name, Msg: fmt.Sprintf("binary data (a NUL byte at offset %d), not CSV text", i)}
	}
	if !utf8.Valid(data) {
		return nil, &CSVError{Path: name, Msg: "not UTF-8 text"}
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = 0 // every record as long as the header
	header, err := r.Read()
	if err != nil {
		return nil, csvErr(name, err)
	}
	t := &Table{Header: make([]string, len(header))}
	seen := make(map[string]bool, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		if h == "" {
			h = "column_" + strconv.Itoa(i+1)
		}
		if seen[h] {
			return nil, &CSVError{Path: name, Line: 1, Msg: fmt.Sprintf("column %q appears twice in the header", h)}
		}
		seen[h] = true
		t.Header[i] = h
	}
	if needPerformance && t.Col(ColPerformance) < 0 {
		return nil, &CSVError{Path: name, Line: 1, Msg: fmt.Sprintf("no performance column (columns: %s)", strings.Join(t.Header, ", "))}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		t.Rows = append(t.Rows, rec)
	}
	return t, nil
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "the row does not have as many fields as the header"
		}
		return &CSVError{Path: name, Line: pe.Line, Msg: msg}
	}
	return &CSVError{Path: name, Msg: err.Error()}
}
