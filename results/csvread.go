package results

// Benchmark CSVs are parsed with encoding/csv rather than gocsv: their columns are not known
// in advance (madengine's plus any a benchmark adds, all of which must be kept in order),
// and every value must stay the exact text the benchmark wrote. gocsv maps known columns
// onto struct fields, so it would need wrapper types for every column and would still drop
// or re-format the unknown ones.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// MaxCSVRows is how many rows of one node's results CSV collect keeps; the rest are
// counted (Table.Total) and reported, so that a CSV of millions of rows costs time but not
// memory, and the report stays readable.
const MaxCSVRows = 10000

// Beyond the row cap, a results CSV is bounded in its shape, so that the rows kept cost
// memory in proportion to a small part of the file, whatever its shape: a row of a
// million empty fields costs 16 MB as strings, a 6 MB field is no benchmark result.
const (
	// MaxCSVColumns is the most columns a results CSV may have (madengine's have ~30).
	MaxCSVColumns = 1024
	// MaxCSVField is the longest field, in bytes.
	MaxCSVField = 64 << 10
	// maxKeptBytes is how much of a node's CSV is kept (strings and their headers): rows
	// beyond it are counted like those beyond MaxCSVRows. Workers hold a few tables each
	// at once, so this times 3 per worker bounds collect's memory for tables.
	maxKeptBytes = 4 << 20
)

// readCSVBeneath reads a results CSV at rel inside a node folder (no link on the way may
// lead out of it: see safefile.OpenBeneath). It streams: memory holds the first maxRows
// rows, never the file; the file is still read to its end (at most limit bytes), to count
// its rows and check every one. ctx is checked as it goes.
func readCSVBeneath(ctx context.Context, fr *safefile.Reader, dir, rel string, limit int64, maxRows int) (*Table, error) {
	path := filepath.Join(dir, rel)
	// Most results CSVs are small: read whole into the worker's reused buffer.
	data, err := fr.ReadBeneath(dir, rel, min(limit, smallCSV))
	var tl *safefile.TooLargeError
	if !errors.As(err, &tl) {
		if err != nil {
			return nil, err
		}
		return parseCSVRows(path, data, true, maxRows)
	}
	f, err := safefile.OpenBeneath(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lr := &limitedReader{r: f, left: limit}
	br := bufPool.Get().(*bufio.Reader)
	defer bufPool.Put(br)
	br.Reset(lr)
	t, err := parseStream(ctx, path, br, true, maxRows, true)
	if lr.over {
		return nil, &CSVError{Path: path, Msg: fmt.Sprintf("larger than the %d MiB limit", limit>>20)}
	}
	return t, err
}

// smallCSV is the size up to which a results CSV is read whole, then parsed.
const smallCSV = 1 << 20

var bufPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// limitedReader reads at most left bytes and notes whether the file had more.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
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

// ParseTable parses a CSV as ParseCSV does, but one without a performance column too (a
// file that perf.csv's rows are appended to).
func ParseTable(name string, data []byte) (*Table, error) { return parseCSV(name, data, false) }

func parseCSV(name string, data []byte, needPerformance bool) (*Table, error) {
	return parseCSVRows(name, data, needPerformance, 0)
}

// parseCSVRows is parseCSV keeping at most maxRows rows (0: all).
func parseCSVRows(name string, data []byte, needPerformance bool, maxRows int) (*Table, error) {
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
	return parseStream(context.Background(), name, bytes.NewReader(data), needPerformance, maxRows, false)
}

// parseStream parses CSV text from r, keeping at most maxRows rows (0: all, else also
// at most maxKeptBytes of them) and counting the rest in Total. A header of more than
// MaxCSVColumns columns, or a field longer than MaxCSVField, is a *CSVError. With check, every field is checked for NUL bytes and UTF-8 (the
// caller has not seen the whole text); a byte order mark at the start is dropped.
func parseStream(ctx context.Context, name string, in io.Reader, needPerformance bool, maxRows int, check bool) (*Table, error) {
	if check {
		br, ok := in.(*bufio.Reader)
		if !ok {
			br = bufio.NewReader(in)
		}
		if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
			br.Discard(3)
		}
		in = br
	}
	r := csv.NewReader(in)
	r.FieldsPerRecord = 0 // every record as long as the header
	header, err := r.Read()
	if err == io.EOF {
		return nil, &CSVError{Path: name, Msg: "empty file: no header and no rows"}
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	if len(header) > MaxCSVColumns {
		return nil, &CSVError{Path: name, Line: 1, Msg: fmt.Sprintf("%d columns; collect reads at most %d", len(header), MaxCSVColumns)}
	}
	if err := checkFields(name, r, header, check); err != nil {
		return nil, err
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
	total, kept, full := 0, 0, false
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		if err := checkFields(name, r, rec, check); err != nil {
			return nil, err
		}
		total++
		if total%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if full {
			continue
		}
		if maxRows > 0 {
			kept += rowBytes(rec)
			if len(t.Rows) == maxRows || kept > maxKeptBytes {
				full = true
				r.ReuseRecord = true // rows from here on are only counted
				continue
			}
		}
		t.Rows = append(t.Rows, rec)
	}
	if total > len(t.Rows) {
		t.Total = total
	}
	return t, nil
}

// rowBytes is what a kept row costs: its slice, the string headers and the text.
func rowBytes(rec []string) int {
	n := 24 + 16*len(rec)
	for _, f := range rec {
		n += len(f)
	}
	return n
}

// checkFields refuses a record with a field longer than MaxCSVField and, with text, one
// with a NUL byte or text that is not UTF-8.
func checkFields(name string, r *csv.Reader, rec []string, text bool) error {
	for i, f := range rec {
		if len(f) > MaxCSVField {
			line, _ := r.FieldPos(i)
			return &CSVError{Path: name, Line: line, Msg: fmt.Sprintf("a field of %d bytes; collect reads fields of at most %d", len(f), MaxCSVField)}
		}
	}
	if !text {
		return nil
	}
	for _, f := range rec {
		if strings.IndexByte(f, 0) >= 0 {
			line, _ := r.FieldPos(0)
			return &CSVError{Path: name, Line: line, Msg: "binary data (a NUL byte), not CSV text"}
		}
		if !utf8.ValidString(f) {
			line, _ := r.FieldPos(0)
			return &CSVError{Path: name, Line: line, Msg: "not UTF-8 text"}
		}
	}
	return nil
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

// MaxAppendSize bounds the user's perf.csv that AppendCSV rewrites.
const MaxAppendSize = 4 * MaxCSVSize

// TrimPathPrefix drops a leading "path: " from an error message that InputError repeats.
func TrimPathPrefix(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}
