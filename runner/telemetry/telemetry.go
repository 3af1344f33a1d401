package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
)

// OpenSampler opens the telemetry of the GPUs inv lists (gpu.OpenSampler with the node's
// GPU options); tests give their own.
type OpenSampler func(ctx context.Context, inv gpu.Inventory) (gpu.Sampler, error)

// Node is a node's GPU sampling: one sampler for the node's selected GPUs, opened at the
// first run that samples and closed when the node's run ends, used by one run at a time (a
// node runs its containers one after another).
type Node struct {
	every  time.Duration // 0: off
	open   OpenSampler
	vendor string    // the node's selection: its vendor (gpu.VendorNone: no GPUs)
	gpus   []gpu.GPU // and its GPUs

	// mu holds the sampler's opening and closing: the node opens it while its images
	// arrive (start in a goroutine), its runs take it (start), its end closes it.
	mu      sync.Mutex
	opened  bool
	sampler gpu.Sampler
	err     error // why nothing can be sampled on this node
	said    bool  // the reason was logged

	// later, when set, runs a run's summary writing beside the node's critical path
	// (WriteLater); nil: stop writes it.
	later func(func())
}

// WriteLater hands each run's summary writing (its series' end, the summary file and its
// syncs) to later, which runs it beside the node's critical path and waits for it before the
// node ends: the stop of a run then only ends its sampling.
func (t *Node) WriteLater(later func(func())) {
	if t != nil {
		t.later = later
	}
}

// stopWait bounds how long ending a run waits for the sampling goroutine: the sampler
// answers within its context, so this only matters for a library that does not.
const stopWait = 3 * time.Second

// New is the sampling, every interval (0: off), of a node's selected GPUs (vendor and gpus);
// open opens their sampler.
func New(every time.Duration, open OpenSampler, vendor string, gpus []gpu.GPU) *Node {
	return &Node{every: every, open: open, vendor: vendor, gpus: gpus}
}

// Start opens the sampler the first time, and returns it (or why there is none). The node's
// run starts it while its images arrive, so that the library does not open at the first
// container's start.
func (t *Node) Start(ctx context.Context) (gpu.Sampler, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.opened {
		t.opened = true
		switch {
		case t.every == 0:
		case t.vendor == "" || t.vendor == gpu.VendorNone || len(t.gpus) == 0:
			t.err = fmt.Errorf("%w: this node runs its benchmarks without GPUs", gpu.ErrNotFound)
		default:
			octx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			t.sampler, t.err = t.open(octx, gpu.Inventory{Vendor: t.vendor, GPUs: t.gpus})
		}
	}
	return t.sampler, t.err
}

// sayOnce reports whether the reason nothing can be sampled is still to be logged, and
// marks it logged.
func (t *Node) sayOnce() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := !t.said
	t.said = true
	return first
}

// giveUp stops using a sampler that did not answer: no later run may use it (the goroutine
// stuck in it still holds it).
func (t *Node) giveUp(run string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sampler, t.err = nil, fmt.Errorf("the GPU library stopped answering during %s", run)
}

// Close closes the sampler (after an opening in progress, which is bounded).
func (t *Node) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.opened = true
	if t.sampler != nil {
		_ = t.sampler.Close()
		t.sampler = nil
	}
}

// SampleDuring samples run's GPUs (gpus) from now until the returned stop is called, into
// the node folder's telemetry/<run>.jsonl, and writes telemetry/<run>.json when it stops.
// Nothing here can fail or delay the benchmark: a file that cannot be written, or GPUs that
// cannot be read, are logged once (on log) and recorded as unavailable. A nil Node samples
// nothing.
func (t *Node) SampleDuring(ctx context.Context, nf *jobdir.NodeFolder, log *slog.Logger, run string, gpus []gpu.GPU) (stop func()) {
	if t == nil || t.every == 0 {
		return func() {}
	}
	start := time.Now().UTC()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	var s *series // the goroutine's until done
	// The file is made here (the node folder is this goroutine's), the library opened in the
	// sampling goroutine.
	var out io.Writer = io.Discard
	f, err := nf.CreateTelemetry(run)
	if err != nil {
		log.Warn("GPU telemetry: cannot create the series file; the summary is still written", "run", run, "err", err)
		f = nil
	} else {
		out = f
	}
	go func() {
		defer close(done)
		// Opening the library (the first run's, unless the image phase already did) happens
		// here, beside the container's start, never before it.
		sampler, openErr := t.Start(ctx)
		if openErr != nil && t.sayOnce() {
			log.Info("GPU telemetry unavailable on this node: recorded as such in each run's telemetry file", "why", openErr.Error())
		}
		source, sel := "", gpus
		if sampler != nil {
			source = sampler.Source()
		}
		if openErr != nil {
			sel = nil
		}
		s = newSeries(out, run, source, t.every, start, sel, jobdir.MaxTelemetrySeriesSize)
		if openErr != nil {
			s.note(gpu.Unavailable{GPU: -1, Field: "gpu", Why: openErr.Error()})
			<-sctx.Done()
			return
		}
		// Each run's file says every fact its GPUs could not give so far on this node (the
		// sampler says each once per node; a missing counter is missing in every run).
		_ = gpu.Loop(sctx, sampler, t.every, func() time.Time { return time.Now().UTC() }, func(rd gpu.Round) error {
			if rd.Cut { // the run ended during the sample: what was read stands
				if len(rd.Readings) > 0 {
					s.add(rd.At, rd.Readings)
				}
				return nil
			}
			s.add(rd.At, rd.Readings)
			for _, u := range rd.Unavailable {
				if u.GPU < 0 || s.byIndex[u.GPU] != nil {
					s.note(u)
				}
			}
			return nil
		})
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(stopWait):
			log.Warn("GPU telemetry: the GPU library did not answer in time; this run's telemetry has no summary and later runs are not sampled", "run", run)
			t.giveUp(run)
			go func() {
				<-done
				if f != nil {
					f.Close()
				}
			}()
			return
		}
		end := time.Now().UTC()
		write := func() {
			sum, werr := s.finish(end)
			if f != nil {
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
			}
			if werr != nil {
				log.Warn("GPU telemetry: writing the series", "run", run, "err", werr)
			}
			if err := nf.WriteTelemetrySummary(sum); err != nil {
				log.Warn("GPU telemetry: writing the summary", "run", run, "err", err)
			}
		}
		if t.later != nil {
			t.later(write)
			return
		}
		write()
	}
}
