package runner

import (
	"context"

	"github.com/benchctl/benchctl/runner/podman"

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
