package slurm

import (
	"context"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// SubmittedMaxAge is how long the files of a submission (its secret above all) are kept
// when neither submit --wait nor collect removed them at the job's end.
const SubmittedMaxAge = 7 * 24 * time.Hour

// PruneSubmitted removes the submission files older than SubmittedMaxAge of jobs that have
// ended. Slurm is asked about each (10 s at most); a job it says is active, or one it
// does not answer about, is kept — and after the first question it does not answer, the
// rest are kept without asking, for the next submit.
func PruneSubmitted(ctx context.Context, run Commander, l jobdir.Layout, now time.Time) (int, error) {
	failed := false
	s := Scheduler{Run: run, Timeout: 10 * time.Second}
	return l.PruneSubmitted(SubmittedMaxAge, now, func(id string) bool {
		if failed {
			return true
		}
		st, err := s.JobState(ctx, id)
		failed = err != nil
		return err != nil || (st.Known && st.Active) // in doubt, keep it
	})
}
