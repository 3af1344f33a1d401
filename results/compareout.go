package results

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Err is a *RegressionError when any row regressed.
func (c *Comparison) Err() error {
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
			what = fmt.Sprintf("%+.2f %%", *ch.Percent)
		}
		reg = append(reg, fmt.Sprintf("%s: %s", strings.Join(nonEmpty(ch.Model, ch.Metric, ch.Key), " "), what))
	}
	if len(reg) == 0 {
		return nil
	}
	return &RegressionError{Regressed: reg}
}

// WriteComparison writes a comparison as a table, markdown, csv or json.
func WriteComparison(w io.Writer, format string, c *Comparison) error {
	header := []string{"MODEL", "METRIC", "KEY", "BASE", "NEW", "CHANGE", "BETTER", "VERDICT"}
	var lines [][]string
	for _, ch := range c.Changes {
		pct := "-"
		if ch.Percent != nil {
			pct = fmt.Sprintf("%+.2f%%", *ch.Percent)
		}
		verdict := ch.Verdict
		if ch.Status != "" {
			verdict += " (" + ch.Status + ")"
		}
		lines = append(lines, []string{ch.Model, dash(ch.Metric), dash(ch.Key), dash(ch.Base), dash(ch.New), pct, ch.Direction, verdict})
	}
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	case FormatCSV:
		t := &Table{Header: []string{"model", "metric", "key", "base", "new", "change_percent", "better", "verdict"}}
		for i, ch := range c.Changes {
			row := append([]string{}, lines[i]...)
			row[1], row[2], row[3], row[4], row[5] = ch.Metric, ch.Key, ch.Base, ch.New, ""
			if ch.Percent != nil {
				row[5] = strconv.FormatFloat(*ch.Percent, 'f', 4, 64)
			}
			t.Rows = append(t.Rows, row)
		}
		data, err := EncodeCSV(t)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case FormatMarkdown, FormatTable:
		return writeGrid(w, format == FormatMarkdown, header, lines)
	}
	return fmt.Errorf("unknown format %q (use %s)", format, strings.Join(Formats(), ", "))
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
