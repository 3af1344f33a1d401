package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// Err is an *InputError (exit 4) when no row of one side matched a row of the other, else
// a *RegressionError when any row regressed.
func (c *Comparison) Err() error {
	if c.unmatched != nil {
		return c.unmatched
	}
	var reg []string
	for _, ch := range c.Changes {
		if ch.Verdict != VerdictRegressed {
			continue
		}
		what := "no number in new"
		switch {
		case ch.Status != "":
			what = "status " + ch.Status
		case ch.Percent != nil:
			what = FormatPercent(*ch.Percent, ch.Tolerance) + " (tolerance " + stats.FormatStat(ch.Tolerance) + "%)"
		}
		reg = append(reg, fmt.Sprintf("%s: %s", strings.Join(NonEmpty(ch.Model, ch.Metric, ch.Key), " "), what))
	}
	if len(reg) == 0 {
		return nil
	}
	return &results.RegressionError{Regressed: reg}
}

// WriteComparison writes a comparison as a table, markdown, csv or json.
func WriteComparison(w io.Writer, format string, c *Comparison) error {
	header := []string{"MODEL", "METRIC", "KEY", "BASE", "NEW", "CHANGE", "BETTER", "TOLERANCE", "VERDICT", "NOTE"}
	var lines [][]string
	for _, ch := range c.Changes {
		pct := "-"
		if ch.Percent != nil {
			pct = FormatPercent(*ch.Percent, ch.Tolerance)
		}
		verdict := ch.Verdict
		if ch.Status != "" {
			verdict += " (" + ch.Status + ")"
		}
		better := ch.Direction
		if ch.Guessed {
			better += " (guessed)"
		}
		lines = append(lines, []string{ch.Model, results.Dash(ch.Metric), results.Dash(ch.Key), results.Dash(ch.Base), results.Dash(ch.New), pct, better, stats.FormatStat(ch.Tolerance) + "%", verdict, results.Dash(ChangeNote(ch))})
	}
	switch format {
	case results.FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	case results.FormatCSV:
		t := &results.Table{Header: []string{"model", "metric", "key", "base", "new", "change_percent", "better", "tolerance_percent", "verdict", "note",
			"method", "p", "change_low", "change_high", "base_trials", "new_trials", "direction_guessed"}}
		num := func(v *float64) string {
			if v == nil {
				return ""
			}
			return strconv.FormatFloat(*v, 'g', -1, 64)
		}
		for i, ch := range c.Changes {
			row := append([]string{}, lines[i]...)
			row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[9] = ch.Metric, ch.Key, ch.Base, ch.New, num(ch.Percent), ch.Direction,
				strconv.FormatFloat(ch.Tolerance, 'g', -1, 64), ChangeNote(ch)
			row = append(row, ch.Method, num(ch.P), num(ch.Low), num(ch.High), strconv.Itoa(ch.BaseTrials), strconv.Itoa(ch.NewTrials), strconv.FormatBool(ch.Guessed))
			t.Rows = append(t.Rows, row)
		}
		data, err := results.EncodeCSV(t)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case results.FormatMarkdown, results.FormatTable:
		return results.WriteGrid(w, format == results.FormatMarkdown, header, lines)
	}
	return fmt.Errorf("unknown format %q for a comparison", format)
}

func NonEmpty(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ChangeNote says how a row was judged: over trials, the rank test's p-value and the
// shift's interval; an inconclusive row, how many more trials would settle it.
func ChangeNote(ch Change) string {
	var parts []string
	switch ch.Method {
	case "rank test":
		parts = append(parts, fmt.Sprintf("%d vs %d trials, p=%s", ch.BaseTrials, ch.NewTrials, strconv.FormatFloat(*ch.P, 'g', 3, 64)))
		if ch.Low != nil && ch.High != nil {
			parts = append(parts, fmt.Sprintf("shift %s to %s (%.0f%%)", FormatPercent(*ch.Low, ch.Tolerance), FormatPercent(*ch.High, ch.Tolerance), ch.Coverage*100))
		}
	case "single-trial":
		parts = append(parts, "single-trial")
	case "reference":
		parts = append(parts, "against the expected value")
	}
	if ch.Verdict == VerdictInconclusive {
		if ch.MoreTrials > 0 {
			parts = append(parts, fmt.Sprintf("about %d more trials a side would settle it", ch.MoreTrials))
		} else {
			parts = append(parts, "the change is at the tolerance: more trials will not settle it")
		}
	}
	return strings.Join(parts, "; ")
}

func sideOf(s string, side func(float64) int) int {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 2
	}
	return side(v)
}

// FormatPercent shows a change in percent with as many decimals as it takes (2 to 6) for
// the shown number to fall on the same side of the tolerance as the number itself: a
// -5.004 % regression beside a 5 % tolerance shows as -5.004 %, never as -5.00 %.
func FormatPercent(pct, tol float64) string {
	side := func(v float64) int {
		switch a := math.Abs(v); {
		case a > tol:
			return 1
		case a < tol:
			return -1
		}
		return 0
	}
	want := side(pct)
	s := strconv.FormatFloat(pct, 'f', -1, 64) // every digit it has, if 6 decimals are not enough
	for d := 2; d <= 6; d++ {
		if t := strconv.FormatFloat(pct, 'f', d, 64); sideOf(t, side) == want {
			s = t
			break
		}
	}
	if pct >= 0 {
		s = "+" + s
	}
	return s + "%"
}
