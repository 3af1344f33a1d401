package textsafe

import (
	"errors"
	"strconv"
	"strings"
)

// Cell returns s as a CSV cell that a spreadsheet shows as text and does not evaluate
// (OWASP's CSV injection rule): a cell whose first character, after any leading spaces, is
// =, +, -, @, a tab, a carriage return or a newline gets a single quote in front
// ("=HYPERLINK(...)" becomes "'=HYPERLINK(...)"), unless the rest is a number.
//
// A number is what strconv.ParseFloat reads (a value too large for a float64 included):
// "-1.5", "+3e2", "-0", "1e-5" stay as written, and so do "-inf" and "+Inf", which numpy
// and pandas read back as numbers and which cannot call anything in a spreadsheet (at worst
// a #NAME? error); ParseFloat reads no signed NaN, so "-nan" is quoted. The test is strict: "-1,234" (a thousands
// separator or a decimal comma) and " -1 " with a trailing blank are not numbers and are
// quoted. A cell that already starts with a single quote is left alone, so Cell is
// idempotent: a perf.csv read back and written again is not quoted twice.
func Cell(s string) string {
	if !IsFormula(s) {
		return s
	}
	return "'" + s
}

// IsFormula reports whether a spreadsheet would take s for a formula (see Cell).
func IsFormula(s string) bool {
	t := strings.TrimLeft(s, " ")
	if t == "" {
		return false
	}
	switch t[0] {
	case '=', '+', '-', '@', '\t', '\r', '\n':
	default:
		return false
	}
	_, err := strconv.ParseFloat(t, 64)
	return err != nil && !errors.Is(err, strconv.ErrRange)
}
