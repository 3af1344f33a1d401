package logscan

import (
	"io"
	"testing"
)

// madengine's default error patterns (execution/container_runner_helpers.py,
// DEFAULT_LOG_ERROR_PATTERNS) and its benign lines (ContainerRunner.run_container's
// benign substrings and ROCProf regexes): each line is scanned alone with the defaults.
func TestMadengineDefaults(t *testing.T) {
	for _, c := range []struct {
		line    string
		pattern string // "" = not an error
	}{
		{"SystemExit: 2", "SystemExit"},
		{"raise SystemExit(1)", "SystemExit"},
		{"Exception: the server did not answer", "Exception:"},
		{"ImportError: cannot import name 'x' from 'y'", "ImportError:"},
		{"ModuleNotFoundError: No module named 'vllm'", "ModuleNotFoundError:"},
		{"KeyError: 'x'", ""}, // not one of madengine's defaults
		// benign substrings
		{"FutureWarning: Exception: deprecated", ""},
		{"Opened result file: FAILED.db", ""},
		{"SQLite3 generation :: RuntimeError: none", ""},
		{"rocpd_op: Exception: x", ""},
		{"rpd_tracer: FAILED to flush", ""},
		{"[rocprofv3] Exception: tool finalised", ""},
		// ROCProf's glog lines: E/W and eight digits are a log level and a date
		{"E20250101 12:00:00.000 1 generateRocpd.cpp:88] FAILED to write", ""},
		{"W20250101 12:00:00.000 1 simple_timer.cpp:10] Exception: slow", ""},
		{"W20250101 12:00:00.000 1 generateRocpd.cpp:9] FAILED", ""},
		{"E20250101 12:00:00.000 1 tool.cpp:12] Exception: x", ""},
		// the same words elsewhere are errors
		{"E2025 generateRocpd.cpp FAILED", "FAILED"},                          // not 8 digits
		{"I20250101 12:00:00.000 1 tool.cpp:12] Exception: x", "Exception:"},  // I is not E or W
		{"x E20250101 generateRocpd.cpp FAILED", "FAILED"},                    // not at the start
		{"E20250101 12:00:00.000 1 other.cpp:12] Exception: x", "Exception:"}, // another file
		{"W20250101 1 tool.cpp] Exception: x", "Exception:"},                  // tool.cpp only with E
	} {
		s := New(MadengineDefaults())
		io.WriteString(s, c.line+"\n")
		m := s.Match()
		switch {
		case c.pattern == "" && m != nil:
			t.Errorf("%q matched %q", c.line, m.Pattern)
		case c.pattern != "" && (m == nil || m.Pattern != c.pattern):
			t.Errorf("%q: match %v, want pattern %q", c.line, m, c.pattern)
		}
	}
}

// The ROCProf rules hold with a manifest's own benign list too, as in madengine (they are
// not user configurable there).
func TestGlogRulesAlways(t *testing.T) {
	s := New(Rules{Errors: []string{"FAILED"}, Benign: []string{"nothing"}})
	io.WriteString(s, "E20250101 12:00:00.000 1 generateRocpd.cpp:88] FAILED\nFAILED here\n")
	if m := s.Match(); m == nil || m.Line != 2 {
		t.Fatalf("%v", m)
	}
}

// A zero count of failures is benign, a count that ends in 0 is not: the benign "0 FAILED"
// and "FAILED: 0" hold only where the 0 is a number of its own.
func TestZeroCountBenignIsANumber(t *testing.T) {
	for _, c := range []struct {
		line  string
		error bool
	}{
		{"== 0 FAILED, 12 passed ==", false},
		{"0 FAILED", false},
		{"tests: FAILED: 0", false},
		{"(0 FAILED)", false},
		{"== 10 FAILED, 2 passed ==", true},
		{"100 FAILED", true},
		{"run0 FAILED", true},
		{"FAILED: 05", true},
		{"FAILED: 10", true},
		{"10 FAILED, then 0 FAILED on retry", false}, // a zero count is on the line
	} {
		for _, rules := range []Rules{Defaults(), MadengineDefaults()} {
			s := New(rules)
			io.WriteString(s, c.line+"\n")
			if got := s.Match() != nil; got != c.error {
				t.Errorf("%q: error %v, want %v", c.line, got, c.error)
			}
		}
	}
}

// madengine's own additions (Exception:, SystemExit, ImportError:, ModuleNotFoundError:
// and its benign lines) are for MAD models: the plain defaults keep benchctl's list.
func TestNativeDefaultsKeepTheirList(t *testing.T) {
	for _, line := range []string{"Exception: none", "SystemExit", "ImportError: optional plugin skipped", "ModuleNotFoundError: optional"} {
		s := New(Defaults())
		io.WriteString(s, line+"\n")
		if m := s.Match(); m != nil {
			t.Errorf("%q matched %q with the native defaults", line, m.Pattern)
		}
		s = New(MadengineDefaults())
		io.WriteString(s, line+"\n")
		if s.Match() == nil {
			t.Errorf("%q: no match with madengine's defaults", line)
		}
	}
}
