package runner

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
)

// OpenSampler opens the telemetry of the GPUs inv lists (gpu.OpenSampler with the node's
// GPU options); tests give their own.
type OpenSampler func(ctx context.Context, inv gpu.Inventory) (gpu.Sampler, error)

// telemetry is a node's GPU sampling: one sampler for the node's selected GPUs, opened at
// the first run that samples and closed when the node's run ends, used by one run at a
// time (a node runs its containers one after another).
type telemetry struct {
	every time.Duration // 0: off
	open  OpenSampler
	gpus  GPUAccess // the node's selection

	// mu holds the sampler's opening and closing: the node opens it while its images
	// arrive (start in a goroutine), its runs take it (start), its end closes it.
	mu      sync.Mutex
	opened  bool
	sampler gpu.Sampler
	err     error // why nothing can be sampled on this node
	said    bool  // the reason was logged
}

// stopWait bounds how long ending a run waits for the sampling goroutine: the sampler
// answers within its context, so this only matters for a library that does not.
const stopWait = 3 * time.Second

// start opens the sampler the first time, and returns it (or why there is none).
func (t *telemetry) start(ctx context.Context) (gpu.Sampler, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.opened {
		t.opened = true
		switch {
		case t.every == 0:
		case t.gpus.Vendor == "" || t.gpus.Vendor == gpu.VendorNone || len(t.gpus.GPUs) == 0:
			t.err = fmt.Errorf("%w: this node runs its benchmarks without GPUs", gpu.ErrNotFound)
		default:
			octx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			t.sampler, t.err = t.open(octx, gpu.Inventory{Vendor: t.gpus.Vendor, GPUs: t.gpus.GPUs})
		}
	}
	return t.sampler, t.err
}

// sayOnce reports whether the reason nothing can be sampled is still to be logged, and
// marks it logged.
func (t *telemetry) sayOnce() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := !t.said
	t.said = true
	return first
}

// giveUp stops using a sampler that did not answer: no later run may use it (the goroutine
// stuck in it still holds it).
func (t *telemetry) giveUp(run string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sampler, t.err = nil, fmt.Errorf("the GPU library stopped answering during %s", run)
}

// close closes the sampler (after an opening in progress, which is bounded).
func (t *telemetry) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.opened = true
	if t.sampler != nil {
		_ = t.sampler.Close()
		t.sampler = nil
	}
}

// sampleDuring samples run's GPUs from now until the returned stop is called, into the
// node folder's telemetry/<run>.jsonl, and writes telemetry/<run>.json when it stops.
// Nothing here can fail or delay the benchmark: a file that cannot be written, or GPUs that
// cannot be read, are logged once and recorded as unavailable.
func (r *nodeRun) sampleDuring(ctx context.Context, run string, gpus GPUAccess) (stop func()) {
	t := r.tel
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
	f, err := r.nf.CreateTelemetry(run)
	if err != nil {
		r.log.Warn("GPU telemetry: cannot create the series file; the summary is still written", "run", run, "err", err)
		f = nil
	} else {
		out = f
	}
	go func() {
		defer close(done)
		// Opening the library (the first run's, unless the image phase already did) happens
		// here, beside the container's start, never before it.
		sampler, openErr := t.start(ctx)
		if openErr != nil && t.sayOnce() {
			r.log.Info("GPU telemetry unavailable on this node: recorded as such in each run's telemetry file", "why", openErr.Error())
		}
		source, sel := "", gpus.GPUs
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
			r.log.Warn("GPU telemetry: the GPU library did not answer in time; this run's telemetry has no summary and later runs are not sampled", "run", run)
			t.giveUp(run)
			go func() {
				<-done
				if f != nil {
					f.Close()
				}
			}()
			return
		}
		sum, werr := s.finish(time.Now().UTC())
		if f != nil {
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
		}
		if werr != nil {
			r.log.Warn("GPU telemetry: writing the series", "run", run, "err", werr)
		}
		if err := r.nf.WriteTelemetrySummary(sum); err != nil {
			r.log.Warn("GPU telemetry: writing the summary", "run", run, "err", err)
		}
	}
}

// telemetry is the node's sampling of sel, as the manifest asks.
func (r *nodeRun) telemetry(sel GPUAccess) *telemetry {
	open := r.o.OpenSampler
	if open == nil {
		opts := gpu.Options{SysfsRoot: r.o.SysfsRoot}
		open = func(ctx context.Context, inv gpu.Inventory) (gpu.Sampler, error) {
			return gpu.OpenSampler(ctx, opts, inv)
		}
	}
	return &telemetry{every: r.o.Manifest.Telemetry.Every(), open: open, gpus: sel}
}
