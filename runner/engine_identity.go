package runner

import (
	"context"
	"errors"
	"sync"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/runner/noderecord"
	"github.com/benchctl/benchctl/runner/podman"
	"github.com/benchctl/benchctl/workload"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
)

// identifyEngine asks this node's engine which it is (Docker or Podman, rootless or not),
// and checks it is the kind the run asked for (Options.EngineKind). An engine that does not
// answer is an error only when a kind was asked for: otherwise the image phase says it is
// unreachable, as before.
//
// It asks the engine's ping (image.IdentifyQuick): Docker's /version and /info cost the
// engine 10-25 ms each, and nothing a Docker container is given depends on what they add
// (the platform's name, rootless: the GPUs' way, which waits for the facts, asks its own).
// They come from the node's engine facts (r.facts, asked once for the node record, the
// GPUs and this) once the first container has started: completeIdentity (r.completeEngine)
// then says the engine in the log and job.json. A Podman identity is complete at once (its ping and its
// own /libpod/info), and said at once.
func (r *nodeRun) identifyEngine(ctx context.Context, eng Engine) (image.Identity, error) {
	id, complete, err := image.IdentifyQuick(ctx, eng)
	if err != nil {
		if r.o.EngineKind != image.KindAny {
			return id, err
		}
		r.log.Warn("could not ask the container engine which it is", "err", err)
		return id, nil
	}
	if complete {
		r.engineKnown(id)
	} else {
		r.completeEngine = func(ctx context.Context) { r.completeIdentity(ctx, id) }
	}
	if id.Podman() {
		if h := podman.ThisHost(id); h.Unknown() != "" {
			r.log.Warn("containers keep Podman's default resource limits", "reason", h.Unknown())
		}
	}
	if err := image.CheckKind(r.o.EngineKind, id); err != nil {
		return id, err
	}
	return id, nil
}

// completeIdentity completes a Docker identity from the engine's facts (its /version and
// /info, asked once for the node) and says it (engineKnown). Facts that do not come leave
// the ping's identity, with why rootless is not known.
func (r *nodeRun) completeIdentity(ctx context.Context, quick image.Identity) {
	f, err := r.facts.Facts(ctx)
	id := quick
	switch {
	case err != nil:
		id.RootlessUnknown = err.Error()
	default:
		id = image.CompleteIdentity(quick, f.Kind, f.Name, f.Version, f.APIVersion, f.Rootless, f.InfoProblem)
	}
	r.engineKnown(id)
}

// engineKnown says the engine's whole identity: in the log, in job.json's engine (rank 0),
// and in the node record.
func (r *nodeRun) engineKnown(id image.Identity) {
	r.log.Info("engine", "kind", id.Kind, "name", id.Name, "version", id.Version, "api", id.APIVersion, "rootless", id.Rootless, "address", id.Host)
	if id.RootlessUnknown != "" && r.o.EngineKind == image.KindAny {
		// Asked for by name, CheckKind refuses it instead.
		r.log.Warn("the engine cannot say whether it runs rootless: taken as rootful", "reason", id.RootlessUnknown)
	}
	r.jobMu.Lock()
	r.fullEngine = &id
	r.jobMu.Unlock()
	if r.node.Rank == 0 {
		if err := r.writeJob(nil); err != nil {
			r.log.Warn("could not update job.json with the engine", "err", err)
		}
	}
}

// jobEngine is job.json's engine: rank 0's, once asked.
func jobEngine(id image.Identity) *jobdir.JobEngine {
	if id.Kind == "" {
		return nil
	}
	return &jobdir.JobEngine{Kind: id.Kind, Name: id.Name, Version: id.Version, APIVersion: id.APIVersion, Rootless: id.Rootless, Host: id.Host}
}

// onceFacts asks a runtime its facts once, when first wanted, and tells them to every
// caller (the identity, the GPUs' way, the node record): the engine answers /version and
// /info once per node and job, not once for each. Bounded by noderecord.Timeout.
type onceFacts struct {
	begin func()
	done  chan struct{}
	f     workload.Facts
	err   error
}

// askFacts makes the asking of t's facts, under ctx; the first Facts starts it.
func askFacts(ctx context.Context, t factsTeller) *onceFacts {
	o := &onceFacts{done: make(chan struct{})}
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

// factsFor is what tells the node's engine facts: the runtime's whole facts where the GPUs'
// way needs /info's (its CDI spec folders, whether Docker runs rootless), else those of its
// version answer alone, where the runtime has them (Docker's /info is the dearer call, and
// its /version says rootless too).
func factsFor(rt workload.Runtime, vendor string) factsTeller {
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

// knownFacts are facts already asked.
func knownFacts(f workload.Facts, err error) *onceFacts {
	o := &onceFacts{begin: func() {}, done: make(chan struct{}), f: f, err: err}
	close(o.done)
	return o
}

// Facts asks the facts unless they are asked already, and waits for them (or ctx).
func (o *onceFacts) Facts(ctx context.Context) (workload.Facts, error) {
	o.begin()
	select {
	case <-o.done:
		return o.f, o.err
	case <-ctx.Done():
		return workload.Facts{}, ctx.Err()
	}
}

// inspectMemo is the node's engine as the image phase sees it: the images it inspects are
// kept for the containers (a container's user is its image's USER, r.imageUsers), one round
// trip per image instead of two. DaemonHost and Ping are the engine's (the image package
// asks them of the engine it is given).
type inspectMemo struct {
	Engine
	users *sync.Map
}

func (m inspectMemo) ImageInspect(ctx context.Context, ref string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	res, err := m.Engine.ImageInspect(ctx, ref, opts...)
	if err == nil && res.Config != nil && len(opts) == 0 {
		m.users.Store(ref, res.Config.User)
		if res.ID != "" {
			m.users.Store(res.ID, res.Config.User)
		}
	}
	return res, err
}

func (m inspectMemo) DaemonHost() string { return image.EngineHostOf(m.Engine) }

func (m inspectMemo) Ping(ctx context.Context, opts client.PingOptions) (client.PingResult, error) {
	p, ok := m.Engine.(interface {
		Ping(context.Context, client.PingOptions) (client.PingResult, error)
	})
	if !ok {
		return client.PingResult{}, errors.New("the engine client cannot ping")
	}
	return p.Ping(ctx, opts)
}
