package results

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// AggregateOptions tune Aggregate. The zero value works.
type AggregateOptions struct {
	// Partial collects a job that is still running: its running nodes are listed as
	// running, not as failed. Without it, running nodes are counted in Nodes.Running and
	// the caller decides (Collect refuses).
	Partial bool
	// Scheduler is the batch system's view of the job's latest attempt. When it knows the
	// job has ended, a node whose status still says running stopped without recording its
	// end, and counts as failed.
	Scheduler jobdir.SchedulerState
	// KeyColumns replace DefaultKeyColumns when not nil.
	KeyColumns []string
	// Workers read node folders in parallel (default: 2 per CPU, at least 4, at most 16).
	Workers int
	// Now stamps CollectedAt (default time.Now).
	Now func() time.Time
	// CollectedBy is the version of benchctl that collects.
	CollectedBy string
	// Progress, if set, is called from one goroutine after each node folder is merged.
	Progress func(nodesDone int)
}

// Aggregate reads a job attempt's folder node by node and returns its summary; nothing is
// written. Node folders are read by a few workers and merged one at a time, so memory does
// not hold all nodes at once (see the package doc for what is kept per node). Problems with
// single files are recorded in the summary; an error means the job folder itself could not
// be read, or ctx ended.
func Aggregate(ctx context.Context, dir jobdir.Dir, opts AggregateOptions) (*Summary, error) {
	a := newAggregator(dir, opts)
	a.readJob()
	if err := a.stream(ctx); err != nil {
		return nil, err
	}
	if err := a.streamEarlier(ctx); err != nil {
		return nil, err
	}
	return a.finish(), nil
}

func (o *AggregateOptions) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return min(16, max(4, 2*runtime.GOMAXPROCS(0)))
}

// maxStraysNamed bounds how many ranks a missing node's reason names a stray folder of.
const maxStraysNamed = 1000

// stream lists the job's node folders (jobdir.ListNodes: the folders of nodes/ that are
// the job's; the others are problems, never counted) and sends them to workers; results are
// merged here.
func (a *aggregator) stream(ctx context.Context) error {
	list, err := a.dir.ListNodes(a.job)
	if errors.Is(err, fs.ErrNotExist) {
		a.problem("no nodes folder: no node ever started")
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the node folders: %w", err)
	}
	for _, s := range list.Stray {
		a.problem("%s", s)
		if r, _, ok := jobdir.ParseNodeName(s.Name); ok && len(a.strays) < maxStraysNamed {
			if a.strays == nil {
				a.strays = map[int]string{}
			}
			a.strays[r] = s.Name
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := a.opts.workers()
	names := make(chan string, n)
	out := make(chan *nodeData, n)
	go func() {
		defer close(names)
		for _, nf := range list.Nodes {
			select {
			case names <- nf.Name:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var fr safefile.Reader
			for name := range names {
				if ctx.Err() != nil {
					continue // stopped: drain the names, read no more nodes
				}
				out <- loadNode(ctx, &fr, a.dir, name, a.specs, thisAttempt)
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	done := 0
	for nd := range out {
		if ctx.Err() != nil {
			continue // drain
		}
		a.add(nd)
		done++
		if a.opts.Progress != nil {
			a.opts.Progress(done)
		}
	}
	return ctx.Err()
}
