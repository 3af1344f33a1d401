// Package enginefacts asks a node's engine what it is once for the node's run, when first
// wanted, and tells every caller (the engine's identity, the GPUs' way, the node record): the
// engine answers /version (and, where GPUs need it, /info) once per node and job.
package enginefacts

import (
	"context"
	"sync"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/runner/noderecord"
	"github.com/benchctl/benchctl/workload"
)

// Teller tells an engine's facts: a runtime (workload.Runtime), or a part of what it can say.
type Teller interface {
	Facts(ctx context.Context) (workload.Facts, error)
}

// Once asks a runtime its facts once, when first wanted, and tells them to every
// caller (the identity, the GPUs' way, the node record): the engine answers /version and
// /info once per node and job, not once for each. Bounded by noderecord.Timeout.
type Once struct {
	begin func()
	done  chan struct{}
	f     workload.Facts
	err   error
}

// Ask makes the asking of t's facts, under ctx; the first Facts starts it.
func Ask(ctx context.Context, t Teller) *Once {
	o := &Once{done: make(chan struct{})}
	o.begin = sync.OnceFunc(func() {
		go func() {
			defer close(o.done)
			ctx, cancel := context.WithTimeout(ctx, noderecord.Timeout)
			defer cancel()
			o.f, o.err = t.Facts(ctx)
		}()
	})
	return o
}

// For is what tells the node's engine facts: the runtime's whole facts where the GPUs'
// way needs /info's (its CDI spec folders, whether Docker runs rootless), else those of its
// version answer alone, where the runtime has them (Docker's /info is the dearer call, and
// its /version says rootless too).
func For(rt workload.Runtime, vendor string) Teller {
	v, ok := rt.(interface {
		VersionFacts(ctx context.Context) (workload.Facts, error)
	})
	if !ok || vendor == gpu.VendorAMD || vendor == gpu.VendorNVIDIA {
		return rt
	}
	return versionFacts{v.VersionFacts}
}

type versionFacts struct {
	f func(context.Context) (workload.Facts, error)
}

func (v versionFacts) Facts(ctx context.Context) (workload.Facts, error) { return v.f(ctx) }

// Known are facts already asked.
func Known(f workload.Facts, err error) *Once {
	o := &Once{begin: func() {}, done: make(chan struct{}), f: f, err: err}
	close(o.done)
	return o
}

// Begin asks the facts now (they are asked once whoever asks first).
func (o *Once) Begin() { o.begin() }

// Facts asks the facts unless they are asked already, and waits for them (or ctx).
func (o *Once) Facts(ctx context.Context) (workload.Facts, error) {
	o.begin()
	select {
	case <-o.done:
		return o.f, o.err
	case <-ctx.Done():
		return workload.Facts{}, ctx.Err()
	}
}
