package figures

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Row is one figure read from the output.
type Row struct {
	Metric string
	Value  float64
	Text   string // the value as written
	Unit   string
	Better string // higher, lower, or "" (the name decides, as for any metric)
	// Key tells the row apart from the figure's others: the pattern's other named groups, in
	// the pattern's order, or the parser's (size, type, ...).
	Key []Pair
}

// Pair is one part of a row's key.
type Pair struct{ Name, Value string }

// KeyText is the row's key as name=value words joined by ' ' ("" for none).
func (r Row) KeyText() string {
	w := make([]string, len(r.Key))
	for i, p := range r.Key {
		w[i] = p.Name + "=" + p.Value
	}
	return strings.Join(w, " ")
}

// ErrTooManyRows is a figure that read more than MaxRows rows.
var ErrTooManyRows = fmt.Errorf("more than %d rows", MaxRows)

// Read reads the figure s from r (the text its From names): its rows, in the order they
// were written. A figure past MaxRows rows is an error saying so, with the rows up to it.
func Read(s Spec, r io.Reader) ([]Row, error) {
	var p parser
	switch s.Parser {
	case "":
		re, err := Compile(s.Pattern)
		if err != nil {
			return nil, err
		}
		p = &patternParser{spec: s, re: re}
	case ParserNCCL, ParserRCCL:
		p = &ncclParser{}
	case ParserOSU:
		p = &osuParser{}
	case ParserHPCC:
		p = &hpccParser{}
	case ParserHPL:
		p = &hplParser{}
	default:
		return nil, fmt.Errorf("no parser %q", s.Parser)
	}
	var rows []Row
	err := eachLine(r, func(line string) error {
		for _, row := range p.line(line) {
			if len(rows) == MaxRows {
				return ErrTooManyRows
			}
			rows = append(rows, row)
		}
		return nil
	})
	return rows, err
}

// parser reads a format line by line: the rows each line gives.
type parser interface {
	line(string) []Row
}

// eachLine calls fn with each line of r, without its end of line; a line longer than
// MaxLineBytes is given in pieces of that size. fn's error stops the reading.
func eachLine(r io.Reader, fn func(string) error) error {
	br := bufio.NewReaderSize(r, MaxLineBytes)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			line := strings.TrimRight(string(b), "\r\n")
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// patternParser is a figure's own pattern: a row per match (several a line, if it says so).
type patternParser struct {
	spec Spec
	re   interface {
		FindAllStringSubmatch(string, int) [][]string
		SubexpNames() []string
	}
}

func (p *patternParser) line(l string) []Row {
	var out []Row
	names := p.re.SubexpNames()
	for _, m := range p.re.FindAllStringSubmatch(l, -1) {
		row := Row{Metric: p.spec.Metric, Unit: p.spec.Unit, Better: p.spec.Better}
		ok := false
		for i, n := range names {
			switch {
			case n == ValueGroup:
				row.Text = strings.TrimSpace(m[i])
				row.Value, ok = number(row.Text)
			case n != "":
				row.Key = append(row.Key, Pair{n, strings.TrimSpace(m[i])})
			}
		}
		if ok {
			out = append(out, row)
		}
	}
	return out
}

// number reads a figure's value: a decimal number, with an exponent or not; not NaN or an
// infinity, and not one with a thousands separator (which cannot be told from a decimal
// comma).
func number(s string) (float64, bool) {
	if !decimalRE().MatchString(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil // an out-of-range number is an error (ErrRange), not an infinity
}

var decimalRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
})
