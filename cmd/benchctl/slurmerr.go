package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
)

// readableScheduler is a scheduler whose JobState error is one readable line: Slurm that
// cannot be asked gives an error per command (squeue, scontrol), each with its exit status and
// every line the command wrote on stderr, which collect logged as a 600-character warning of
// escaped newlines. The line names --no-slurm, which does not ask.
type readableScheduler struct{ jobdir.Scheduler }

func (s readableScheduler) JobState(ctx context.Context, jobID string) (jobdir.SchedulerState, error) {
	st, err := s.Scheduler.JobState(ctx, jobID)
	if err != nil {
		err = errors.New(oneLineSlurmError(err) + " (--no-slurm does not ask)")
	}
	return st, err
}

// oneLineSlurmError says err on one line: for each command's error (the errors joined in
// it), the command and the last line it wrote (Slurm's tools say the cause last:
// "slurm_load_jobs error: Unable to contact slurm controller"); commands that said the same
// share it ("squeue, scontrol: ..."). An error of one line is kept whole. Control
// characters are escaped, and the line is cut at 300 characters.
func oneLineSlurmError(err error) string {
	type said struct {
		cmds []string
		msg  string
	}
	var all []*said
	for _, part := range leafErrors(err) {
		text := strings.TrimSpace(part.Error())
		lines := strings.Split(text, "\n")
		cmd, msg := "", text
		if len(lines) > 1 {
			cmd, _, _ = strings.Cut(text, ": ")
			msg = strings.TrimSpace(lines[len(lines)-1])
		}
		i := slices.IndexFunc(all, func(s *said) bool { return s.msg == msg })
		if i < 0 {
			all = append(all, &said{msg: msg})
			i = len(all) - 1
		}
		if cmd != "" && !slices.Contains(all[i].cmds, cmd) {
			all[i].cmds = append(all[i].cmds, cmd)
		}
	}
	parts := make([]string, 0, len(all))
	for _, s := range all {
		if len(s.cmds) > 0 {
			parts = append(parts, strings.Join(s.cmds, ", ")+": "+s.msg)
		} else {
			parts = append(parts, s.msg)
		}
	}
	return oneLine(strings.Join(parts, "; "), 300)
}

// leafErrors are the errors joined in err (errors.Join, nested), or err itself.
func leafErrors(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		if e != nil {
			out = append(out, leafErrors(e)...)
		}
	}
	return out
}
