package jobdir

import (
	"strconv"
	"strings"
)

// In a job with an experiment, each trial's run of a benchmark has its own files in the node
// folder, named after the benchmark and the trial's place in the job's plan:
// "<benchmark>@<trial>" for the log (<benchmark>@<trial>.log), the results folder
// (results/<benchmark>@<trial>/) and the diagnostics (diagnostics/<benchmark>@<trial>/).
// A benchmark's name cannot hold '@', so no trial's files are another benchmark's.
const trialSep = "@"

// TrialRunName is the name of a benchmark's files in a trial (seq: the trial's place in the
// job's plan, from 1).
func TrialRunName(bench string, seq int) string { return bench + trialSep + strconv.Itoa(seq) }

// ParseTrialRunName splits a name written by TrialRunName; ok is false for a benchmark's
// own name (a job without an experiment) and for anything else.
func ParseTrialRunName(name string) (bench string, seq int, ok bool) {
	b, s, found := strings.Cut(name, trialSep)
	if !found || b == "" || !allDigits(s) || len(s) > maxRankDigits {
		return "", 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return "", 0, false
	}
	return b, n, true
}
