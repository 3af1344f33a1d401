package diagnostics

import (
	"context"
	"errors"
	"github.com/benchctl/benchctl/workload/engine"
	"io"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
)

// podmanTopEngine answers as Podman 4.3.1's service does (seen on the testbed): a top with no
// ps_args runs ps inside the container, which an image without ps (FROM scratch) lacks, and
// the answer ends with no body (the client reads EOF); with AIX format descriptors Podman
// reads the processes from /proc itself.
type podmanTopEngine struct {
	Engine
	asked [][]string
}

func (*podmanTopEngine) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{Version: "4.3.1", APIVersion: "1.41",
		Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}}, nil
}

func (*podmanTopEngine) ContainerInspect(context.Context, string, client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{Container: container.InspectResponse{State: &container.State{Running: true, Pid: -1}}}, nil
}

func (e *podmanTopEngine) ContainerTop(_ context.Context, _ string, o client.ContainerTopOptions) (client.ContainerTopResult, error) {
	e.asked = append(e.asked, o.Arguments)
	if len(o.Arguments) == 0 || strings.HasPrefix(o.Arguments[0], "-") {
		return client.ContainerTopResult{}, io.EOF
	}
	return client.ContainerTopResult{Titles: []string{"PID", "PPID", "USER", "ELAPSED", "COMMAND"},
		Processes: [][]string{{"1", "0", "root", "5.5s", "/dummy --rows 1 --sleep 300s"}}}, nil
}

// On Podman the processes of a running container are listed from an image without ps (was
// "not captured: processes: EOF"), and the report says the engine is Podman; Docker is
// asked as before (no ps_args: its ps -ef runs on the host).
func TestCaptureListsProcessesOnPodman(t *testing.T) {
	noGPU := func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{}, errors.New("no GPUs")
	}
	eng := &podmanTopEngine{}
	r := capture(context.Background(), engine.New(eng), "c1", "timed out after 3s", nil, nil, nil, noGPU)
	if len(r.Processes) != 1 || !strings.Contains(strings.Join(r.Processes[0], " "), "/dummy") {
		t.Errorf("processes %v, not captured %v; want /dummy listed", r.Processes, r.NotCaptured)
	}
	if !strings.HasPrefix(r.EngineVersion, "Podman Engine 4.3.1") {
		t.Errorf("engine %q does not name Podman", r.EngineVersion)
	}
	if len(eng.asked) != 1 || len(eng.asked[0]) != 1 || strings.HasPrefix(eng.asked[0][0], "-") {
		t.Errorf("asked top with %v, want one call with AIX descriptors", eng.asked)
	}
	// Docker: no arguments (its default, ps -ef on the host).
	d := &dockerTopEngine{}
	capture(context.Background(), engine.New(d), "c1", "timed out", nil, nil, nil, noGPU)
	if len(d.asked) != 1 || len(d.asked[0]) != 0 {
		t.Errorf("Docker was asked top with %v, want no arguments", d.asked)
	}
}

// dockerTopEngine is a Docker Engine with a running container, recording top's arguments.
type dockerTopEngine struct {
	topEngine
	asked [][]string
}

func (e *dockerTopEngine) ContainerTop(ctx context.Context, id string, o client.ContainerTopOptions) (client.ContainerTopResult, error) {
	e.asked = append(e.asked, o.Arguments)
	return e.topEngine.ContainerTop(ctx, id, o)
}
