package figures

import (
	"fmt"
	"io"
	"regexp"
	"strings"
)

// MaxQuoted bounds the part of a line a verdict quotes.
const MaxQuoted = 200

// Judge reads the output r once and says why it fails s: a Require pattern that no line
// matched, a Forbid pattern that one did (with the line's number and text, cut at
// MaxQuoted); "" when it passes. A pattern that does not compile fails too (Check should
// have refused it).
func (s Success) Judge(r io.Reader) (string, error) {
	var require, forbid []*regexp.Regexp
	for _, l := range []struct {
		pats []string
		to   *[]*regexp.Regexp
	}{{s.Require, &require}, {s.Forbid, &forbid}} {
		for _, p := range l.pats {
			re, err := compileLine(p)
			if err != nil {
				return "", err
			}
			*l.to = append(*l.to, re)
		}
	}
	found := make([]bool, len(require))
	verdict, n := "", 0
	err := eachLine(r, func(line string) error {
		n++
		for i, re := range require {
			if !found[i] && re.MatchString(line) {
				found[i] = true
			}
		}
		for i, re := range forbid {
			if re.MatchString(line) {
				verdict = fmt.Sprintf("line %d matches success.forbid[%d] %q: %s", n, i, s.Forbid[i], quote(line))
				return io.EOF // the first forbidden line decides
			}
		}
		return nil
	})
	if err != nil && err != io.EOF {
		return "", err
	}
	if verdict != "" {
		return verdict, nil
	}
	for i, ok := range found {
		if !ok {
			return fmt.Sprintf("no line of the output matches success.require[%d] %q", i, s.Require[i]), nil
		}
	}
	return "", nil
}

// Verdict says why the rows read for s fail it: none at all (the figure is missing), or a
// value out of its bounds (the first one); "" when they pass.
func (s Spec) Verdict(rows []Row) string {
	if len(rows) == 0 {
		if s.Parser != "" {
			return fmt.Sprintf("figure %s: the %s parser found no figure in %s", s.Name(), s.Parser, s.Source())
		}
		return fmt.Sprintf("figure %s: no line of %s matches %q", s.Name(), s.Source(), s.Pattern)
	}
	for _, r := range rows {
		where := r.Metric
		if k := r.KeyText(); k != "" {
			where += " (" + k + ")"
		}
		if s.Min != nil && r.Value < *s.Min {
			return fmt.Sprintf("figure %s: %s is %s, below its min %g", s.Name(), where, r.Text, *s.Min)
		}
		if s.Max != nil && r.Value > *s.Max {
			return fmt.Sprintf("figure %s: %s is %s, above its max %g", s.Name(), where, r.Text, *s.Max)
		}
	}
	return ""
}

func quote(line string) string {
	line = strings.TrimSpace(line)
	if len(line) > MaxQuoted {
		line = line[:MaxQuoted] + "…"
	}
	return fmt.Sprintf("%q", line)
}
