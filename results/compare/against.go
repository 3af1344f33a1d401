package compare

import (
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/stats"
)

// What a job is compared against (compare JOB, collect --check).
const (
	AgainstReference = "reference" // the manifest's reference job (benchctl reference set)
	AgainstLast      = "last"      // the newest earlier collected job of the same manifest
	AgainstBest      = "best"      // the earlier collected job of the same manifest with the best figures
)

// ManifestJob is a collected job of a manifest.
type ManifestJob struct {
	Dir     jobdir.Dir
	Job     *jobdir.Job
	Started time.Time
}

// JobsOf lists the collected jobs (a perf.csv in their newest attempt) of the manifest name
// in the shared directory whose folders owner owns (owner < 0: anyone's), newest first by
// start time. The jobs folder is read once (jobdir.NewestAttempts), not once per job.
func JobsOf(l jobdir.Layout, name string, owner int) ([]ManifestJob, error) {
	dirs, err := l.NewestAttempts(owner)
	if err != nil {
		return nil, err
	}
	var out []ManifestJob
	for _, d := range dirs {
		if _, err := os.Stat(d.Output(jobdir.PerfFile)); err != nil {
			continue // not collected
		}
		j, err := jobdir.ReadJob(d.JobFile())
		if err != nil || j.Manifest.Name != name {
			continue
		}
		out = append(out, ManifestJob{Dir: d, Job: j, Started: j.StartedAt})
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(js []ManifestJob) {
	slices.SortStableFunc(js, func(a, b ManifestJob) int { return b.Started.Compare(a.Started) })
}

// AgainstError says there is nothing to compare a job against (exit 4).
type AgainstError struct{ Msg string }

func (e *AgainstError) Error() string      { return e.Msg }
func (e *AgainstError) InvalidInput() bool { return true }

// Against finds the job that cur (a collected job folder) is judged against: its manifest's
// reference, the last or the best earlier collected job of the same manifest, or the job of
// that id.
func Against(l jobdir.Layout, cur jobdir.Dir, against string) (jobdir.Dir, error) {
	j, err := jobdir.ReadJob(cur.JobFile())
	if err != nil {
		return jobdir.Dir{}, fmt.Errorf("reading job %s: %w", cur.JobID, err)
	}
	name := j.Manifest.Name
	switch against {
	case "", AgainstReference:
		r, err := l.ReadReference(name)
		if err != nil {
			return jobdir.Dir{}, err
		}
		if r == nil {
			return jobdir.Dir{}, &AgainstError{Msg: fmt.Sprintf("manifest %s has no reference job: set one with benchctl reference set JOB (or compare --against last)", name)}
		}
		d, err := l.Find(r.Job, r.Attempt)
		if err != nil {
			return jobdir.Dir{}, &AgainstError{Msg: fmt.Sprintf("the reference of %s is job %s, which is gone (%v): set another with benchctl reference set JOB", name, r.Job, err)}
		}
		return d, nil
	case AgainstLast, AgainstBest:
		// Only jobs of the owner of cur's folder: a co-writer's folder of the same manifest
		// name, started when they like, is never the baseline.
		owner := -1
		if st, err := os.Stat(cur.Path); err == nil {
			if uid, ok := safefile.Owner(st); ok {
				owner = uid
			}
		}
		jobs, err := JobsOf(l, name, owner)
		if err != nil {
			return jobdir.Dir{}, err
		}
		var earlier []ManifestJob
		for _, mj := range jobs {
			if mj.Dir.JobID != cur.JobID && mj.Started.Before(j.StartedAt) {
				earlier = append(earlier, mj)
			}
		}
		if len(earlier) == 0 {
			return jobdir.Dir{}, &AgainstError{Msg: fmt.Sprintf("no collected job of manifest %s started before job %s", name, cur.JobID)}
		}
		if against == AgainstLast {
			return earlier[0].Dir, nil
		}
		return best(cur, earlier)
	}
	d, err := l.Find(against, -1)
	if err != nil {
		return jobdir.Dir{}, err
	}
	return d, nil
}

// best is the earlier job whose figures are best against cur's: over the rows both have,
// the mean of log(value) (of 1/value for a metric where lower is better, by the manifest's
// rules, else guessed): the geometric mean of how much better each row is.
func best(cur jobdir.Dir, earlier []ManifestJob) (jobdir.Dir, error) {
	cs, rules, err := ReadJobSource(cur)
	if err != nil {
		return jobdir.Dir{}, err
	}
	opts := CompareOptions{Rules: rules}
	bestScore, bestAt := math.Inf(-1), -1
	for i, mj := range earlier {
		es, _, err := ReadJobSource(mj.Dir)
		if err != nil {
			continue
		}
		c := CompareSources(es, cs, opts)
		score, n := 0.0, 0
		for _, ch := range c.Changes {
			v, ok := stats.ParsePerformance(ch.Base)
			if !ok || v <= 0 || ch.New == "" {
				continue
			}
			if ch.Direction == results.LowerIsBetter {
				score -= math.Log(v)
			} else {
				score += math.Log(v)
			}
			n++
		}
		if n > 0 && score/float64(n) > bestScore {
			bestScore, bestAt = score/float64(n), i
		}
	}
	if bestAt < 0 {
		return jobdir.Dir{}, &AgainstError{Msg: "no earlier job of the manifest has rows in common with this one"}
	}
	return earlier[bestAt].Dir, nil
}
