package runner

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// toolWatch reads a wrapped benchmark's output for the lines its tools' script prints when
// a tool's step fails (toolMarker and the run's token). Only a line with the token naming a
// step of this plan counts, so text a benchmark prints cannot name anything; lines are
// bounded (a longer one is skipped).
type toolWatch struct {
	tr   *toolRun
	mu   sync.Mutex
	part []byte
	over bool
	fail string // the first failed step, described
	cmd  bool   // the benchmark's command itself failed
}

func (w *toolWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p {
		if c != '\n' {
			if len(w.part) < 256 {
				w.part = append(w.part, c)
			} else {
				w.over = true
			}
			continue
		}
		if line := string(bytes.TrimRight(w.part, "\r")); !w.over && strings.HasPrefix(line, w.tr.marker) {
			if d := w.tr.describe(line); d == commandFailed {
				w.cmd = true
			} else if d != "" && w.fail == "" {
				w.fail = d
			}
		}
		w.part, w.over = w.part[:0], false
	}
	return len(p), nil
}

// commandFailed is what describe says of the line that the benchmark's command failed.
const commandFailed = "\x00command"

// failed is the failed tool step the output named, or "", and whether the benchmark's own
// command failed.
func (w *toolWatch) failed() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fail, w.cmd
}

// describe turns a marker line ("benchctl-tools-TOKEN: pre 2 exit 1") into what failed:
// "tool rpd: pre_scripts scripts/common/pre_scripts/trace.sh rpd exited 1"; "" for any
// other line. A step's line says how it failed: "exit N", "copy" (the script could not
// be copied to the tools' directory) or "timeout" (it ran past its bound).
func (tr *toolRun) describe(line string) string {
	rest, ok := strings.CutPrefix(line, tr.marker)
	if !ok || tr.marker == "" {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) < 3 {
		return ""
	}
	i, err := strconv.Atoi(f[1])
	if err != nil || i < 0 {
		return ""
	}
	var exit string
	switch {
	case f[2] == "exit" && len(f) == 4:
		code, err := strconv.Atoi(f[3])
		if err != nil {
			return ""
		}
		exit = fmt.Sprintf("exited %d", code)
	case f[2] == "copy" && len(f) == 3:
		exit = "could not be copied to " + tr.Dir
	case f[2] == "timeout" && len(f) == 3:
		exit = fmt.Sprintf("timed out after %ds", tr.Timeout)
	default:
		return ""
	}
	var steps []toolStep
	switch f[0] {
	case "command":
		return commandFailed
	case "setup":
		return fmt.Sprintf("tools %s: the tools' directory %s could not be made (is the working directory writable?)", strings.Join(tr.Names, ", "), tr.Dir)
	case "pre":
		steps = tr.Pre
	case "post":
		steps = tr.Post
	default:
		return ""
	}
	if i >= len(steps) {
		return ""
	}
	st := steps[i]
	what := strings.Join(append([]string{st.Script.Path}, st.Script.Args...), " ")
	if f[0] == "pre" {
		return fmt.Sprintf("tool %s: %s %s %s, so the benchmark did not run", st.Tool, st.Kind, what, exit)
	}
	return fmt.Sprintf("tool %s: %s %s %s", st.Tool, st.Kind, what, exit)
}

// toolWatcher is the watch of a benchmark whose command runs its tools' script, or nil.
func toolWatcher(s Spec) *toolWatch {
	if s.Tools == nil || !s.Tools.Wrapped {
		return nil
	}
	return &toolWatch{tr: s.Tools}
}

// toolOutcome reports a failed run whose tool failed as the tool's failure: its error names
// the tool and the script (and what the benchmark did, when it failed too).
func toolOutcome(res execResult, w *toolWatch) execResult {
	if w == nil || res.Outcome == OutcomeSuccess {
		return res
	}
	f, cmd := w.failed()
	switch {
	case f == "":
		return res
	case cmd || res.Outcome != "failure": // the benchmark failed, or timed out: say both
		res.Err = fmt.Errorf("%w; and %s", res.Err, f)
	default:
		res.Err = fmt.Errorf("%s (the benchmark's container %v because of it)", f, res.Err)
	}
	return res
}
