package tests

import (
	"testing"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/tests/testbed"
)

// testEngine is a kind of engine that the engine-parameterised suites (the builder
// conformance suite, the image round trip) run against: each node's Docker Engine, its
// rootful Podman engine, or its rootless one (reached as root, which may use its socket).
type testEngine struct {
	name     string
	podman   bool
	rootless bool
}

// testEngines are every kind of engine of the testbed's nodes.
var testEngines = []testEngine{{name: "docker"}, {name: "podman", podman: true}, {name: "podman-rootless", podman: true, rootless: true}}

// host is the engine's DOCKER_HOST value on node; a Podman engine requires the testbed's
// Podman engines (testbed.RequirePodman: skipped without them, failed under CI=true).
func (e testEngine) host(t *testing.T, tb *testbed.Testbed, node string) string {
	t.Helper()
	switch {
	case e.rootless:
		return testbed.RequirePodman(t).PodmanRootlessSockets[node]
	case e.podman:
		return testbed.RequirePodman(t).PodmanSockets[node]
	}
	return tb.Sockets[node]
}

// client is an Engine API client of the engine on node, closed when the test ends.
func (e testEngine) client(t *testing.T, tb *testbed.Testbed, node string) *client.Client {
	t.Helper()
	c, err := client.New(client.WithHost(e.host(t, tb, node)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
