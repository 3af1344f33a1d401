package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// Old submissions of ended jobs are pruned, active ones kept; once Slurm does not answer,
// it is not asked again and the rest are kept.
func TestPruneSubmitted(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	os.MkdirAll(l.Submit(), 0o700)
	old := time.Now().Add(-2 * SubmittedMaxAge)
	for i, id := range []string{"101", "102", "103"} {
		token := fmt.Sprintf("t%d", i)
		os.WriteFile(l.SubmitFiles(token).Secret, []byte("s"), 0o600)
		l.RecordSubmitted(token, id)
		os.Chtimes(filepath.Join(l.Submit(), id+".job"), old, old)
		os.Chtimes(l.SubmitFiles(token).Secret, old, old)
	}
	f := &fakeSlurm{out: map[string]string{"squeue": "RUNNING\n"}}
	n, err := PruneSubmitted(context.Background(), f, l, time.Now())
	if err != nil || n != 0 {
		t.Fatalf("all active: pruned %d, %v", n, err)
	}
	f = &fakeSlurm{err: map[string]error{"squeue": errors.New("slurm_load_jobs error: Unable to contact slurm controller")}}
	n, _ = PruneSubmitted(context.Background(), f, l, time.Now())
	asked := map[string]bool{} // the job ids Slurm was asked about (each may take several commands)
	for _, c := range f.calls {
		for _, id := range []string{"101", "102", "103"} {
			if strings.Contains(strings.Join(c, " "), id) {
				asked[id] = true
			}
		}
	}
	if n != 0 || len(asked) != 1 {
		t.Fatalf("Slurm down: pruned %d after asking about %v; want 0 after one job", n, asked)
	}
	f = &fakeSlurm{out: map[string]string{"squeue": "COMPLETED\n"}}
	if n, err := PruneSubmitted(context.Background(), f, l, time.Now()); err != nil || n != 3 {
		t.Fatalf("all ended: pruned %d, %v", n, err)
	}
}
