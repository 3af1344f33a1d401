// Package figures reads a benchmark's figures of merit from its output, for the programs
// that print their results as text rather than as the CSV benchctl reads: a figure is a
// pattern with a named group "value" (the other named groups tell rows apart), or one of the
// built-in parsers of the formats people run (nccl-tests and rccl-tests, the OSU
// micro-benchmarks, HPC Challenge's hpccoutf.txt, HPL's result lines). Success says which
// lines a passing run must have and must not have; a figure's Min and Max bound its values.
//
// Text in, rows out: the package reads what it is given, bounded (MaxLineBytes a line,
// MaxRows a figure), and imports nothing of benchctl's, so that the manifest checks a
// figure's spec where it is written and the runner applies it where the output is.
package figures

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
	"sync"
)

// The built-in parsers (Spec.Parser).
const (
	ParserNCCL  = "nccl-tests"
	ParserRCCL  = "rccl-tests"
	ParserOSU   = "osu"
	ParserHPCC  = "hpcc"
	ParserHPL   = "hpl"
	FromStdout  = "stdout" // Spec.From: the benchmark's output (stdout and stderr, as its log has them)
	ValueGroup  = "value"  // the named group of a pattern that is the figure's value
	BetterHigh  = "higher"
	BetterLow   = "lower"
	KeyColumn   = "figure_key"  // the results column of a row's key groups, name=value, joined by ' '
	ResultsFile = "figures.csv" // the results CSV the runner writes the figures' rows to
	MaxRows     = 100_000       // a figure's rows, at most
	MaxPatterns = 64            // a success's require and forbid patterns, at most
	MaxFigures  = 64            // a benchmark's figures, at most: each reads its source once
	// MaxLineBytes bounds a line: a longer one is read in pieces of this size.
	MaxLineBytes = 64 << 10
	// MaxPatternBytes bounds a pattern's text.
	MaxPatternBytes = 4096
)

// Parsers are the built-in parsers' names, in the order the docs list them.
var Parsers = []string{ParserNCCL, ParserRCCL, ParserOSU, ParserHPCC, ParserHPL}

// Spec is one entry of a benchmark's figures: a pattern (Metric, Pattern, Unit, Better) or a
// parser; From says where the text is. Min and Max bound every value the figure reads.
type Spec struct {
	Metric  string   `json:"metric,omitempty" yaml:"metric,omitempty"`
	Pattern string   `json:"pattern,omitempty" yaml:"pattern,omitempty"`
	Parser  string   `json:"parser,omitempty" yaml:"parser,omitempty"`
	From    string   `json:"from,omitempty" yaml:"from,omitempty"`
	Unit    string   `json:"unit,omitempty" yaml:"unit,omitempty"`
	Better  string   `json:"better,omitempty" yaml:"better,omitempty"`
	Min     *float64 `json:"min,omitempty" yaml:"min,omitempty"`
	Max     *float64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// Success decides pass or fail from the benchmark's output: every Require pattern must match
// a line of it, no Forbid pattern may match any.
type Success struct {
	Require []string `json:"require,omitempty" yaml:"require,omitempty"`
	Forbid  []string `json:"forbid,omitempty" yaml:"forbid,omitempty"`
}

// Problem is what is wrong with a spec: Field is the path below the spec (pattern, from,
// ...), Msg says what and how to fix it.
type Problem struct {
	Field string
	Msg   string
}

// Source is the text a figure reads: "stdout", or a path relative to the output folder.
func (s Spec) Source() string {
	if s.From == "" {
		return FromStdout
	}
	return s.From
}

// Name is how messages name the figure: its metric, else its parser.
func (s Spec) Name() string {
	if s.Metric != "" {
		return s.Metric
	}
	return s.Parser
}

var metricRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:/%-]{0,127}$`) })

// Check says what is wrong with s (nothing: nil).
func (s Spec) Check() []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{field, fmt.Sprintf(format, args...)})
	}
	switch {
	case s.Parser != "" && s.Pattern != "":
		add("parser", "give a pattern or a parser, not both")
	case s.Parser != "":
		if !contains(Parsers, s.Parser) {
			add("parser", "%q is not a parser benchctl has (allowed: %s); or give a pattern", s.Parser, strings.Join(Parsers, ", "))
		}
		if s.Metric != "" || s.Unit != "" || s.Better != "" {
			add("parser", "a parser names its own metrics, units and directions: drop metric, unit and better")
		}
	case s.Pattern != "":
		if !metricRE().MatchString(s.Metric) {
			add("metric", "%q: give the figure's metric name (letters, digits, _ . : / %% -; at most 128)", s.Metric)
		}
		if _, err := Compile(s.Pattern); err != nil {
			add("pattern", "%v", err)
		}
	default:
		add("pattern", "give a pattern with a named group (?P<value>...), or a parser (%s)", strings.Join(Parsers, ", "))
	}
	if s.Better != "" && s.Better != BetterHigh && s.Better != BetterLow {
		add("better", "%q: higher or lower", s.Better)
	}
	if f := s.Source(); f != FromStdout {
		if p := path.Clean(f); path.IsAbs(f) || p == ".." || strings.HasPrefix(p, "../") || p == "." || strings.ContainsRune(f, 0) {
			add("from", "%q: stdout, or a file's path relative to the benchmark's output folder ($BENCHCTL_OUTPUT_DIR), inside it", f)
		}
	}
	for _, b := range []struct {
		name string
		v    *float64
	}{{"min", s.Min}, {"max", s.Max}} {
		if b.v != nil && (math.IsNaN(*b.v) || math.IsInf(*b.v, 0)) {
			add(b.name, "a finite number")
		}
	}
	if s.Min != nil && s.Max != nil && *s.Min > *s.Max {
		add("max", "%g is below min %g", *s.Max, *s.Min)
	}
	return out
}

// Check says what is wrong with s (nothing: nil).
func (s Success) Check() []Problem {
	var out []Problem
	for _, l := range []struct {
		field string
		pats  []string
	}{{"require", s.Require}, {"forbid", s.Forbid}} {
		if len(l.pats) > MaxPatterns {
			out = append(out, Problem{l.field, fmt.Sprintf("%d patterns, more than %d", len(l.pats), MaxPatterns)})
			continue
		}
		for i, p := range l.pats {
			if _, err := compileLine(p); err != nil {
				out = append(out, Problem{fmt.Sprintf("%s[%d]", l.field, i), err.Error()})
			}
		}
	}
	return out
}

// Compile compiles a figure's pattern: RE2 (Go's regexp), at most MaxPatternBytes, with a
// named group "value", and not one that matches an empty line (it would match every line of
// the output: a row each, past any bound).
func Compile(pattern string) (*regexp.Regexp, error) {
	re, err := compileLine(pattern)
	if err != nil {
		return nil, err
	}
	if re.SubexpIndex(ValueGroup) < 0 {
		return nil, fmt.Errorf("%q has no named group (?P<value>...): name the part that is the figure's value", pattern)
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("%q matches an empty line, so every line of the output would be a row: anchor it to text the line must have", pattern)
	}
	return re, nil
}

// compileLine compiles a pattern matched against one line.
func compileLine(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fmt.Errorf("an empty pattern")
	}
	if len(pattern) > MaxPatternBytes {
		return nil, fmt.Errorf("a pattern of %d bytes, more than %d", len(pattern), MaxPatternBytes)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%q is not a pattern benchctl reads (RE2, Go's regexp): %v", pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return re, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Directions are the metrics (globs, as the manifest's metrics: rules take them) whose
// better way the figure knows: a pattern's metric with its Better, or a parser's metrics.
func (s Spec) Directions() map[string]string {
	switch s.Parser {
	case "":
		if s.Better != "" {
			return map[string]string{s.Metric: s.Better}
		}
		return nil
	case ParserNCCL, ParserRCCL:
		return map[string]string{"time_*_place": BetterLow, "algbw_*_place": BetterHigh, "busbw_*_place": BetterHigh, "avg_busbw": BetterHigh}
	case ParserOSU:
		return map[string]string{"*latency*": BetterLow, "*_per_s": BetterHigh, "bandwidth": BetterHigh}
	case ParserHPL:
		return map[string]string{"gflops": BetterHigh, "time": BetterLow}
	case ParserHPCC:
		return map[string]string{"*_time": BetterLow, "*Latency*": BetterLow, "*Error*": BetterLow, "*_Tflops": BetterHigh, "*_Gflops": BetterHigh,
			"*_GBs": BetterHigh, "*_GUPs": BetterHigh, "StarSTREAM_*": BetterHigh, "SingleSTREAM_*": BetterHigh}
	}
	return nil
}
