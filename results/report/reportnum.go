package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/results/stats"
)

// How the report writes numbers for reading (charts, headlines, the slowest nodes): rounded,
// and the same in every locale. The tables keep each value exactly as its CSV had it.
const (
	readableDigits = 4        // significant digits, but never rounding away a digit before the point
	groupSep       = "\u202f" // narrow no-break space between groups of three digits (SI, ISO 80000-1)
	minusSign      = "\u2212" // a real minus, as wide as a digit
)

// readable rounds v for a reader: 4 significant digits ("992.2", "9.052", "0.01235"), whole
// numbers from 1,000 up with their digits in groups of three ("12 346", "1 234"), an
// exponent only beyond 10^15 or below 10^-4 ("1.235e+15"). The thousands separator is a
// narrow no-break space and the decimal mark a point: neither a comma nor a point can be
// misread as the other, whatever the reader's locale.
func readable(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	sign, abs := "", math.Abs(v)
	if v < 0 {
		sign = minusSign
	}
	if abs < 1e-4 || abs >= 1e15 {
		return sign + strconv.FormatFloat(abs, 'e', readableDigits-1, 64)
	}
	dec := max(0, readableDigits-1-int(math.Floor(math.Log10(abs))))
	s := strconv.FormatFloat(abs, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "0" {
		return "0"
	}
	return sign + groupDigits(s)
}

// readableRaw is readable for a value as a CSV wrote it; what is not a number stays as it is.
func readableRaw(raw string) string {
	if v, ok := stats.ParsePerformance(raw); ok {
		return readable(v)
	}
	return strings.TrimSpace(raw)
}

// groupDigits separates the integer part of an unsigned decimal in groups of three, from
// four digits up ("1234.5" -> "1 234.5").
func groupDigits(s string) string {
	intPart, frac, _ := strings.Cut(s, ".")
	if len(intPart) < 4 {
		return s
	}
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteString(groupSep)
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// signedPercent writes a relative difference in percent with one decimal and its sign
// ("−4.1 %", "+0.3 %"); a difference that rounds to zero is "0.0 %".
func signedPercent(f float64) string {
	p := math.Round(f*1000) / 10
	s := strconv.FormatFloat(math.Abs(p), 'f', 1, 64) + groupSep + "%"
	switch {
	case p < 0:
		return minusSign + s
	case p > 0:
		return "+" + s
	}
	return s
}

// percent writes a fraction in percent with one decimal ("2.1 %").
func percent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 1, 64) + groupSep + "%"
}
