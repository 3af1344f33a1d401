package cleanup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/workload"
)

// ContainerCleaner is what finding and removing a job's containers asks of the engine.
type ContainerCleaner interface {
	List(ctx context.Context, labels map[string]string) ([]workload.Process, error)
	Remove(ctx context.Context, id string) error
}

var _ ContainerCleaner = workload.Runtime(nil)

// CallTimeout bounds one Engine call of a cleanup: an engine that does not answer must not
// hold a node past Slurm's KillWait.
const CallTimeout = 5 * time.Second

// Labels set on every benchctl container: the job (without attempt), the attempt, the
// node's rank and the benchmark. runner sets them; a job's containers are found by them.
const (
	LabelJob       = "io.benchctl.job"
	LabelAttempt   = "io.benchctl.attempt"
	LabelRank      = "io.benchctl.rank"
	LabelBenchmark = "io.benchctl.benchmark"
)

// JobContainer is a benchctl container found by its labels.
type JobContainer struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Attempt   int    `json:"attempt"`
	Rank      int    `json:"rank"`
	Benchmark string `json:"benchmark"`
	State     string `json:"state"`
	Error     string `json:"error,omitempty"` // why it could not be removed
}

// JobContainers lists the containers of a job on an engine (label io.benchctl.job),
// every attempt, sorted by attempt, rank and benchmark.
func JobContainers(ctx context.Context, eng ContainerCleaner, job string) ([]JobContainer, error) {
	return jobContainers(ctx, eng, job, CallTimeout)
}

func jobContainers(ctx context.Context, eng ContainerCleaner, job string, timeout time.Duration) ([]JobContainer, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	items, err := eng.List(lctx, map[string]string{LabelJob: job})
	if err != nil {
		return nil, fmt.Errorf("listing the containers of job %s: %w", job, err)
	}
	out := make([]JobContainer, 0, len(items))
	for _, c := range items {
		jc := JobContainer{ID: c.ID, Benchmark: c.Labels[LabelBenchmark], State: c.State, Attempt: -1, Rank: -1, Name: c.Name}
		if a, err := strconv.Atoi(c.Labels[LabelAttempt]); err == nil {
			jc.Attempt = a
		}
		if r, err := strconv.Atoi(c.Labels[LabelRank]); err == nil {
			jc.Rank = r
		}
		out = append(out, jc)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Attempt != b.Attempt {
			return a.Attempt < b.Attempt
		}
		if a.Rank != b.Rank {
			return a.Rank < b.Rank
		}
		return a.Benchmark < b.Benchmark
	})
	return out, nil
}

// RemoveContainers force-removes containers, each call bounded by timeout; a failure is
// recorded in the container's Error.
func RemoveContainers(ctx context.Context, eng ContainerCleaner, cs []JobContainer, timeout time.Duration) []JobContainer {
	for i := range cs {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := eng.Remove(rctx, cs[i].ID)
		cancel()
		if err != nil {
			cs[i].Error = err.Error()
		}
	}
	return cs
}

// CleanupOptions configure Cleanup.
type CleanupOptions struct {
	Job       string // the job id, without attempt
	SharedDir string // where the job folders are; "" cleans containers only
	Host      string // this node's name, as in its node folders (<rank>-<host>)
	// Outcome is written into status files still saying running: "lost" (benchctl was
	// killed, the node crashed) or "cancelled".
	Outcome string
	Engine  ContainerCleaner
	Now     func() time.Time
	// CallTimeout bounds each Engine call (default 5 s).
	CallTimeout time.Duration
}

// CleanupResult is what Cleanup did.
type CleanupResult struct {
	Removed []JobContainer `json:"removed"` // every container of the job found on this engine
	Marked  []string       `json:"marked"`  // status.json files that said running, now Outcome
	// Skipped are folders not written to, each with why (a link, another user's folder).
	Skipped []string `json:"skipped"`
}

// Cleanup removes a job's containers from this node's engine (every attempt) and records
// the end of this host's node folders whose status.json still says running: for a Slurm
// epilog, or by hand after a node lost its benchctl. Every engine call is bounded.
func Cleanup(ctx context.Context, o CleanupOptions) (*CleanupResult, error) {
	if o.Outcome != jobdir.OutcomeLost && o.Outcome != jobdir.OutcomeCancelled {
		return nil, &scheduler.ContextError{Var: "--outcome", Msg: fmt.Sprintf("%q is not lost or cancelled", o.Outcome)}
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	res := &CleanupResult{Removed: []JobContainer{}, Marked: []string{}, Skipped: []string{}}
	var errs []error
	timeout := o.CallTimeout
	if timeout <= 0 {
		timeout = CallTimeout
	}
	if o.Engine != nil {
		cs, err := jobContainers(ctx, o.Engine, o.Job, timeout)
		if err != nil {
			errs = append(errs, err)
		}
		res.Removed = RemoveContainers(ctx, o.Engine, cs, timeout)
		for _, c := range res.Removed {
			if c.Error != "" {
				errs = append(errs, fmt.Errorf("removing container %s: %s", c.Name, c.Error))
			}
		}
	}
	if o.SharedDir != "" {
		marked, skipped, err := markStatuses(o, now().UTC())
		res.Marked = append(res.Marked, marked...)
		res.Skipped = append(res.Skipped, skipped...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// markStatuses ends every status.json of this host, in every attempt of the job, that
// still says running. Each job folder and node folder is opened once, and read and
// written through its descriptor: a folder swapped for a link between the read and the
// write cannot redirect the write. A folder that is a link, or that belongs to another
// user than the one cleanup runs as (root in an epilog), is skipped and reported: the
// job's own cleanup step, run as its owner, records it.
func markStatuses(o CleanupOptions, now time.Time) (marked, skipped []string, err error) {
	l := jobdir.Layout{Shared: o.SharedDir}
	jd, err := l.Find(o.Job, -1)
	var nf *jobdir.JobNotFoundError
	if errors.As(err, &nf) {
		return nil, nil, nil // no folder: nothing ran here, or another shared directory
	}
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, a := range jd.Attempts {
		job, err := l.OpenJob(o.Job, a)
		if refused(err) {
			skipped = append(skipped, err.Error())
			continue
		}
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		m, s, err := markJob(job, o, now)
		job.Close()
		marked, skipped = append(marked, m...), append(skipped, s...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return marked, skipped, errors.Join(errs...)
}

// refused is a folder that cleanup must not write into: a link, not a folder, another
// user's.
func refused(err error) bool {
	var nf *safefile.NotFolderError
	var oe *safefile.OwnerError
	return errors.As(err, &nf) || errors.As(err, &oe)
}

// markJob ends this host's running status files in one attempt's folder.
func markJob(job *jobdir.Folder, o CleanupOptions, now time.Time) (marked, skipped []string, err error) {
	names, err := job.NodeNames()
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, name := range names {
		if _, host, ok := jobdir.ParseNodeName(name); !ok || host != o.Host {
			continue
		}
		nd, err := job.OpenNode(name)
		if refused(err) {
			skipped = append(skipped, err.Error())
			continue
		}
		if err != nil {
			continue
		}
		st, last, err := nd.ReadStatus()
		if err != nil || st.Host != o.Host || !st.Running() || name != jobdir.NodeName(st.Rank, st.Host) {
			nd.Close()
			continue
		}
		if last.IsZero() {
			last = st.StartedAt
		}
		EndStatus(st, o.Outcome, fmt.Sprintf("%s: benchctl on %s stopped without recording its end (last status %s); recorded by benchctl cleanup",
			o.Outcome, o.Host, last.Format(time.RFC3339)), now)
		err = nd.WriteStatus(st)
		nd.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("recording the end in %s: %w", nd.Status(), err))
			continue
		}
		marked = append(marked, nd.Status())
	}
	return marked, skipped, errors.Join(errs...)
}

// EndStatus records an end that the node itself could not record.
func EndStatus(s *jobdir.Status, outcome, why string, now time.Time) {
	s.Outcome, s.ExitCode, s.Error, s.FinishedAt = outcome, 1, why, &now
	for i := range s.Phases {
		if s.Phases[i].FinishedAt == nil {
			s.Phases[i].FinishedAt, s.Phases[i].Outcome, s.Phases[i].Error = &now, jobdir.PhaseFailed, why
		}
	}
	for i := range s.Benchmarks {
		if b := &s.Benchmarks[i]; b.Outcome == jobdir.OutcomeRunning {
			b.Outcome, b.Error, b.FinishedAt = jobdir.OutcomeFailure, why, &now
			if outcome == jobdir.OutcomeCancelled {
				b.Outcome = jobdir.OutcomeCancelled
			}
			b.DurationSeconds = now.Sub(b.StartedAt).Seconds()
		}
	}
}
