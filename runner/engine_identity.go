package runner

import (
	"context"

	"github.com/benchctl/benchctl/runner/podman"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
)

// identifyEngine asks this node's engine which it is (Docker or Podman, rootless or not),
// says so in the log, and checks it is the kind the run asked for (Options.EngineKind). An
// engine that does not answer is an error only when a kind was asked for: otherwise the
// image phase says it is unreachable, as before.
func (r *nodeRun) identifyEngine(ctx context.Context, eng Engine) (image.Identity, error) {
	id, err := image.Identify(ctx, eng)
	if err != nil {
		if r.o.EngineKind != image.KindAny {
			return id, err
		}
		r.log.Warn("could not ask the container engine which it is", "err", err)
		return id, nil
	}
	r.log.Info("engine", "kind", id.Kind, "name", id.Name, "version", id.Version, "api", id.APIVersion, "rootless", id.Rootless, "address", id.Host)
	if id.RootlessUnknown != "" && r.o.EngineKind == image.KindAny {
		// Asked for by name, CheckKind refuses it instead.
		r.log.Warn("the engine cannot say whether it runs rootless: taken as rootful", "reason", id.RootlessUnknown)
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

// jobEngine is job.json's engine: rank 0's, once asked.
func jobEngine(id image.Identity) *jobdir.JobEngine {
	if id.Kind == "" {
		return nil
	}
	return &jobdir.JobEngine{Kind: id.Kind, Name: id.Name, Version: id.Version, APIVersion: id.APIVersion, Rootless: id.Rootless, Host: id.Host}
}
