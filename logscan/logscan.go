package logscan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/internal/textsafe"
)

// DefaultErrors are the error patterns a log is scanned for unless a manifest says
// otherwise, modelled on madengine's log error scan, with a crash's own words
// (Segmentation fault, core dumped). They hold for a manifest's own benchmarks;
// MadengineErrors hold for MAD models.
var DefaultErrors = []string{
	"OutOfMemoryError",
	"HIP out of memory",
	"CUDA out of memory",
	"RuntimeError:",
	"AssertionError:",
	"ValueError:",
	"Traceback (most recent call last)",
	"FAILED",
	"failed (exitcode:",
	"Segmentation fault",
	"core dumped",
}

// MadengineErrors are the error patterns a MAD model's log is scanned for unless the
// manifest (or the checkout's context) says otherwise: DefaultErrors and the rest of
// madengine's DEFAULT_LOG_ERROR_PATTERNS (its container runner). They are words a
// benchmark of one's own may well print in passing ("Exception: none"), so they apply only
// where madengine would have applied them.
var MadengineErrors = append(slices.Clip(DefaultErrors), "SystemExit", "Exception:", "ImportError:", "ModuleNotFoundError:")

// DefaultBenign are lines that contain an error pattern but are not errors: a line with
// one of these is never a match. They are a metrics agent's lines and a test summary's
// zero count of failures. A pattern that starts with a digit holds only where no letter,
// digit or '_' comes before it, and one that ends with a digit only where no digit comes
// after it: "0 FAILED" is benign, "10 FAILED" is not.
var DefaultBenign = []string{
	"Failed to establish connection to the metrics exporter agent",
	"RpcError: Running out of retries to initialize the metrics agent",
	"Metrics will not be exported",
	"0 FAILED",
	"FAILED: 0",
}

// MadengineBenign are the benign lines of a MAD model's log: DefaultBenign and the rest of
// madengine's benign substrings (its ContainerRunner.run_container).
var MadengineBenign = append(slices.Clip(DefaultBenign),
	"FutureWarning",
	"Opened result file:",
	"SQLite3 generation ::",
	"rocpd_op:",
	"rpd_tracer:",
	"[rocprofv3]",
)

// glogBenign are ROCProf's glog lines, which madengine never counts as errors whatever
// the benign list: a line that starts with the level letter and eight digits (the date,
// E20250101) and names the source file. The level letters are a log level there, not
// an error.
var glogBenign = []struct {
	levels string // the level letters the rule covers
	file   string
}{
	{"EW", "generateRocpd.cpp"},
	{"W", "simple_timer.cpp"},
	{"E", "tool.cpp"},
}

// isGlogBenign says whether line is one of ROCProf's glog lines (glogBenign).
func isGlogBenign(line []byte) bool {
	if len(line) < 9 {
		return false
	}
	for _, c := range line[1:9] {
		if c < '0' || c > '9' {
			return false
		}
	}
	for _, r := range glogBenign {
		if bytes.IndexByte([]byte(r.levels), line[0]) >= 0 && bytes.Contains(line[9:], []byte(r.file)) {
			return true
		}
	}
	return false
}

// MaxLine is how much of one line is scanned; the rest of a longer line is skipped.
const MaxLine = 64 << 10

// maxQuote is how much of a matching line a Match keeps.
const maxQuote = 500

// Rules are the patterns a log is scanned with: plain substrings, case-sensitive.
type Rules struct {
	Errors []string
	Benign []string
}

// Defaults are DefaultErrors and DefaultBenign: the rules of a manifest's own benchmark.
func Defaults() Rules { return Rules{Errors: DefaultErrors, Benign: DefaultBenign} }

// MadengineDefaults are MadengineErrors and MadengineBenign: the rules of a MAD model.
func MadengineDefaults() Rules { return Rules{Errors: MadengineErrors, Benign: MadengineBenign} }

// Match is the first line that matched an error pattern.
type Match struct {
	Line    int    // 1-based
	Pattern string // the error pattern it contains
	Text    string // the line, cut to 500 bytes, as the container wrote it
}

// String is the reason a run fails with, quoting the line with its control characters
// escaped (textsafe.Line): it is recorded in status.json and printed by collect and jobs.
func (m *Match) String() string {
	return fmt.Sprintf("line %d contains the error pattern %q: %s", m.Line, m.Pattern, textsafe.Line(m.Text))
}

// Scanner finds the first matching line of what is written to it. It is safe for
// concurrent use (the container's stdout and stderr may be copied by two goroutines).
type Scanner struct {
	mu      sync.Mutex
	rules   Rules
	line    int
	buf     []byte // the current line, up to MaxLine
	skip    bool   // the current line is past MaxLine
	match   *Match
	errBs   [][]byte
	benigns [][]byte
}

// New returns a scanner for rules (nothing matches when rules.Errors is empty).
func New(rules Rules) *Scanner {
	s := &Scanner{rules: rules}
	for _, p := range rules.Errors {
		if p != "" {
			s.errBs = append(s.errBs, []byte(p))
		}
	}
	for _, p := range rules.Benign {
		if p != "" {
			s.benigns = append(s.benigns, []byte(p))
		}
	}
	return s
}

// Write scans p; it never fails.
func (s *Scanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	if s.match != nil || len(s.errBs) == 0 {
		return n, nil // the first match is kept; nothing more to look for
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.skip {
			room := MaxLine - len(s.buf)
			if len(chunk) > room {
				s.buf = append(s.buf, chunk[:room]...)
				s.skip = true
			} else {
				s.buf = append(s.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		s.endLine()
		if s.match != nil {
			break
		}
		p = p[i+1:]
	}
	return n, nil
}

// endLine checks the current line and starts the next.
func (s *Scanner) endLine() {
	s.line++
	line := bytes.TrimRight(s.buf, "\r")
	for _, e := range s.errBs {
		if !bytes.Contains(line, e) {
			continue
		}
		benign := isGlogBenign(line)
		for _, b := range s.benigns {
			benign = benign || containsBenign(line, b)
		}
		if !benign {
			text := strings.ToValidUTF8(string(line[:min(len(line), maxQuote)]), "?")
			s.match = &Match{Line: s.line, Pattern: string(e), Text: strings.TrimSpace(text)}
		}
		break
	}
	s.buf, s.skip = s.buf[:0], false
	if cap(s.buf) > 4*4096 && s.match == nil {
		s.buf = nil // do not keep a long line's buffer
	}
}

// containsBenign says whether line contains the benign pattern b, where a digit at b's
// start has no letter, digit or '_' before it, and a digit at b's end no digit after it
// (a count of its own: "0 FAILED" is not in "10 FAILED", "FAILED: 0" not in "FAILED: 05").
func containsBenign(line, b []byte) bool {
	lead, trail := isDigit(b[0]), isDigit(b[len(b)-1])
	for off := 0; off <= len(line)-len(b); {
		i := bytes.Index(line[off:], b)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(b)
		if (!lead || i == 0 || !isWordByte(line[i-1])) && (!trail || end == len(line) || !isDigit(line[end])) {
			return true
		}
		off = i + 1
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// Match returns the first matching line, including a last line without a newline.
func (s *Scanner) Match() *Match {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.match == nil && len(s.buf) > 0 {
		s.endLine()
	}
	return s.match
}
