package tests

import (
	"context"
	"testing"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/runner/podman"
	"github.com/benchctl/benchctl/tests/testbed"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
	"github.com/benchctl/benchctl/workload/workloadtest"
)

// The runtime conformance suite against every engine of the testbed: Docker, rootful
// Podman and rootless Podman, each through the one Engine API adapter (workload/engine).
func TestEngineRuntimeConformance(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no shell image: run tests/testbed/up.sh again")
	}
	for _, e := range testEngines {
		t.Run(e.name, func(t *testing.T) {
			cli := e.client(t, tb, tb.Nodes[0])
			h := workloadtest.Harness{Runtime: engine.New(cli), Image: tb.ShellImage}
			if e.podman {
				id, err := image.Identify(context.Background(), cli)
				if err != nil {
					t.Fatal(err)
				}
				h.Adapt = podmanAsARunDoes(t, id)
			}
			workloadtest.Run(t, h)
		})
	}
}

// podmanAsARunDoes changes a container as a run does on the engine id (runner/podman): the
// engine's own limits where Podman's defaults are above what the OCI runtime may raise to,
// and (as the testbed's Podman manifests say) the host's network, for which a rootless
// engine here has no /dev/net/tun of its own.
func podmanAsARunDoes(t *testing.T, id image.Identity) func(*workload.Spec) {
	facts := podman.ThisHost(id)
	return func(s *workload.Spec) {
		s.Network = "host"
		if err := podman.AdaptToEngine(id, s, facts); err != nil {
			t.Fatal(err)
		}
	}
}
