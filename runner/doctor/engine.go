package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/benchctl/benchctl/runner/podman"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

// engineChecks are doctor's lines about this node's engine: which engine answered (Docker
// or Podman, rootless or not) and that it is the kind asked for, then, for a rootless
// engine, what rootless cannot give a benchmark (see rootlessChecks). It returns the
// engine's info (for the disk check) and an error when the engine cannot be asked.
func engineChecks(ctx context.Context, o Options, eng Engine) (workload.Facts, image.Identity, []Check, error) {
	id, err := image.Identify(ctx, eng)
	if err != nil {
		return workload.Facts{}, id, nil, err
	}
	info, err := engine.Facts(ctx, eng)
	if err == nil && !info.InfoKnown {
		err = errors.New(info.InfoProblem) // its /info failed
	}
	if err != nil {
		return info, id, nil, err
	}
	c := Check{Name: engineCheckName(o.EngineKind, id.Kind), OK: true, Detail: fmt.Sprintf("%s: %s", eng.DaemonHost(), id)}
	if id.RootlessUnknown != "" {
		c.Detail += " (" + id.RootlessUnknown + ")"
	}
	if id.Podman() {
		if h := podman.ThisHost(id); h.Unknown() != "" {
			c.Detail += "; " + h.Unknown() + ", so containers keep Podman's defaults"
		}
	}
	if err := image.CheckKind(o.EngineKind, id); err != nil {
		c.OK, c.Detail, c.Fix = false, err.Error(), "point DOCKER_HOST at the engine asked for, or ask for the one there (--engine, engine: in the manifest)"
	}
	checks := []Check{c}
	if id.Rootless {
		checks = append(checks, rootlessChecks(o, id)...)
	}
	return info, id, checks, nil
}

// engineCheckName is "docker engine" or "podman engine".
func engineCheckName(asked, found string) string {
	if found == "" {
		found = asked
	}
	if found == image.KindPodman {
		return "podman engine"
	}
	return "docker engine"
}

// engineFailed is the engine line of a node whose engine cannot be reached.
func engineFailed(kind string, err error) Check {
	if kind == image.KindPodman {
		return Check{Name: "podman engine", Detail: err.Error(),
			Fix: "start Podman's service on this node (rootless: systemctl --user start podman.socket; rootful: systemctl start podman.socket; or podman system service --time=0 &), or point DOCKER_HOST at its socket"}
	}
	return Check{Name: "docker engine", Detail: err.Error(), Fix: "start dockerd on this node and point DOCKER_HOST at it (or add your user to the docker group)"}
}

// Engine is what Run asks of this node's engine: which it is (image.Identify), its
// info (engine.Facts: the data root, for the disk check), the address it answered on, and
// Close. cmd passes the Docker client; tests a fake.
type Engine interface {
	image.Versioner
	engine.InfoAPI
	DaemonHost() string
	io.Closer
}

// apiFacts is an Engine API that tells its facts (engine.Facts: its version, its /info
// where it has one), for the node record.
type apiFacts struct{ api engine.VersionAPI }

func (a apiFacts) Facts(ctx context.Context) (workload.Facts, error) { return engine.Facts(ctx, a.api) }
