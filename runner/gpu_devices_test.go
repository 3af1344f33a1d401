package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/runner/gpupath"

	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

// The groups a container gets are those owning its device files, by the files' gids:
// /dev/kfd's and the selected render nodes' (root's group left out, each once), not the
// video and render groups of /etc/group. A device file missing on the node is an error
// naming it; a selected GPU without a render node is one naming the GPU.
func TestAMDDeviceGroupsAreTheFilesOwners(t *testing.T) {
	root, _ := filepath.Abs("../tests/fixtures/sysfs/mi300x")
	owners := map[string]uint32{"/dev/kfd": 110, "/dev/dri/renderD128": 110, "/dev/dri/renderD129": 44, "/dev/dri/renderD130": 0}
	h := gpuHost{opts: gpu.Options{SysfsRoot: root}, groupFile: "/nonexistent",
		statGID: func(p string) (uint32, error) {
			gid, ok := owners[strings.TrimPrefix(p, root)]
			if !ok {
				return 0, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
			}
			return gid, nil
		}}
	for _, c := range []struct {
		gpus, want string
	}{{"0", "110"}, {"0,1", "110,44"}, {"1,0", "110,44"}, {"2", "110"}} {
		acc, err := selectGPUsOn(manifest.GPU{Vendor: "amd"}, testutil.LookupOf(map[string]string{"ROCR_VISIBLE_DEVICES": c.gpus}), h)
		if err != nil || strings.Join(acc.GroupAdd, ",") != c.want {
			t.Errorf("GPUs %s: groups %v %v, want %s", c.gpus, acc.GroupAdd, err, c.want)
		}
	}
	// The live node: a render node KFD names but /dev lacks.
	live := gpuHost{groupFile: "/nonexistent", statGID: h.statGID}
	_, _, err := live.amdDevices([]gpu.GPU{{Index: 3, RenderNode: "/dev/dri/renderD131"}})
	if err == nil || !strings.Contains(err.Error(), "/dev/dri/renderD131") || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing device file: %v", err)
	}
	// A GPU the inventory gives no render node, on a tree without its drm entry.
	_, _, err = h.amdDevices([]gpu.GPU{{Index: 6, PCIBusID: "0000:01:00.0"}})
	var ge *GPUError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "AMD GPU 6 (0000:01:00.0) has no render node") {
		t.Errorf("no render node: %v", err)
	}
}

// Take (a MAD model's n_gpus) narrows the devices too: a model on 1 of 4 GPUs gets one
// render node.
func TestTakeNarrowsTheRenderNodes(t *testing.T) {
	root, _ := filepath.Abs("../tests/fixtures/sysfs/mi300x")
	acc, err := selectGPUs(manifest.GPU{Vendor: "amd", Count: 4}, testutil.LookupOf(nil), gpu.Options{SysfsRoot: root}, "/nonexistent")
	if err != nil || len(acc.Devices) != 5 {
		t.Fatalf("%v %+v", err, acc.Devices)
	}
	one, err := acc.Take(1, "m")
	if err != nil || len(one.Devices) != 2 || one.Devices[1].Host != "/dev/dri/renderD128" {
		t.Fatalf("%v %+v", err, one.Devices)
	}
}

func nvidiaGPUs(n int) []gpu.GPU {
	uuids := []string{"GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c", "GPU-0a7e7c6b-3f0e-55b1-9c1e-2f4c8d7b6a10", "GPU-ffffffff-0000-0000-0000-000000000002"}
	out := make([]gpu.GPU, n)
	for i := range out {
		out[i] = gpu.GPU{Index: i, UUID: uuids[i], NUMANode: -1}
	}
	return out
}

// ForEngine: rootless Podman gets keep-groups instead of numbers (which would name the
// user namespace's groups), and refuses a manifest's groupAdd beside it; planned NVIDIA
// GPUs keep the device request.
func TestForEngine(t *testing.T) {
	rootless := EngineFacts{Engine: EnginePodman, Version: "4.3.1", APIVersion: "1.41", Rootless: true}
	amd := amdNode(2)
	got, path, err := amd.ForEngine(rootless, gpu.CDISpecs{}, nil, "container.groupAdd")
	if err != nil || fmt.Sprint(got.GroupAdd) != "[keep-groups]" || !strings.Contains(path.Why, "keep-groups") || len(got.Devices) != 3 {
		t.Errorf("%v %+v %v", err, got, path)
	}
	if _, _, err := amd.ForEngine(rootless, gpu.CDISpecs{}, []string{"video"}, "container.groupAdd"); err == nil || !strings.Contains(err.Error(), "container.groupAdd [video]") {
		t.Errorf("groupAdd beside keep-groups: %v", err)
	}
	rootful := rootless
	rootful.Rootless = false
	if got, _, err := amd.ForEngine(rootful, gpu.CDISpecs{}, []string{"video"}, "container.groupAdd"); err != nil || fmt.Sprint(got.GroupAdd) != "[44]" {
		t.Errorf("rootful Podman: %v %v", got.GroupAdd, err)
	}
	planned, _, _, err := plannedGPUs(manifest.GPU{Vendor: "nvidia", Count: 2}, nil, errors.New("no GPUs"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := planned.ForEngine(rootless, gpu.CDISpecs{}, nil, "container.groupAdd"); err != nil || got.Requests[0].Driver != "nvidia" {
		t.Errorf("planned: %+v %v", got.Requests, err)
	}
	none := GPUAccess{Vendor: manifest.VendorNone}
	if got, path, err := none.ForEngine(rootless, gpu.CDISpecs{}, []string{"video"}, "container.groupAdd"); err != nil || path.Way != "" || got.Vendor != "none" {
		t.Errorf("none: %v %v", path, err)
	}
}

type fakeVersion struct {
	v    client.ServerVersionResult
	info system.Info
}

func (f fakeVersion) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return f.v, nil
}

func (f fakeVersion) Info(context.Context, client.InfoOptions) (client.SystemInfoResult, error) {
	return client.SystemInfoResult{Info: f.info}, nil
}

// A node's run asks its engine and gives the GPUs, and every benchmark's share, the devices
// that engine wants; the container create and the docker-run line carry them.
func TestEngineGPUsReachTheSpec(t *testing.T) {
	root, _ := filepath.Abs("../gpu/testdata/cdi/index")
	sel := nvidiaGPUs(2)
	acc, err := access(GPUAccess{Vendor: gpu.VendorNVIDIA, System: sel}, sel)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := acc.Take(1, "m")
	g := &nodeGPUs{GPUAccess: acc, access: []GPUAccess{acc, one}}
	var logs testutil.SyncBuffer
	r := &nodeRun{o: Options{Manifest: &manifest.Manifest{}, SysfsRoot: root}, log: slog.New(slog.NewTextHandler(&logs, nil))}
	eng := fakeVersion{v: client.ServerVersionResult{Version: "28.0.1", APIVersion: "1.48"}, info: system.Info{CDISpecDirs: []string{"/etc/cdi"}}}
	if err := r.engineGPUs(context.Background(), eng, g); err != nil {
		t.Fatal(err)
	}
	want := []workload.GPURequest{{Driver: "cdi", DeviceIDs: []string{"nvidia.com/gpu=0", "nvidia.com/gpu=1"}}}
	if !reflect.DeepEqual(g.Requests, want) || !reflect.DeepEqual(g.access[0].Requests, want) || g.access[1].Requests[0].DeviceIDs[0] != "nvidia.com/gpu=0" || len(g.access[1].Requests[0].DeviceIDs) != 1 {
		t.Fatalf("%+v / %+v / %+v", g.Requests, g.access[0].Requests, g.access[1].Requests)
	}
	if !strings.Contains(logs.String(), "way=cdi") {
		t.Errorf("log: %s", logs.String())
	}
	m := &manifest.Manifest{Name: "t", Container: manifest.Container{Network: "host", IPC: "host"}}
	spec := BuildSpec(m, manifest.Benchmark{Name: "b", Command: []string{"/run"}}, Node{JobID: "1", World: 1, Host: "n"}, "img", "k", t.TempDir(), g.GPUAccess, nil)
	if run := spec.DockerRun(); !strings.Contains(run, "--device nvidia.com/gpu=0 --device nvidia.com/gpu=1") || strings.Contains(run, "--gpus") {
		t.Errorf("docker run: %s", run)
	}
	if _, hc := configOf(spec); !reflect.DeepEqual(spec.Process().GPURequests, want) || len(hc.DeviceRequests) != 1 ||
		hc.DeviceRequests[0].Driver != "cdi" || !reflect.DeepEqual(hc.DeviceRequests[0].DeviceIDs, want[0].DeviceIDs) {
		t.Errorf("host config %+v", hc.DeviceRequests)
	}
	// Podman 4.3 with NVIDIA GPUs: refused before any container, not a GPU-less run.
	old := fakeVersion{v: client.ServerVersionResult{Version: "4.3.1", APIVersion: "1.41", Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}}}
	if err := r.engineGPUs(context.Background(), old, g); err == nil || !strings.Contains(err.Error(), "Podman 4.3.1") {
		t.Errorf("podman 4.3: %v", err)
	}
}

// doctor says which way the GPUs take on this engine, and why; a way that cannot work
// fails the check with the reason.
func TestGPUDevicesCheck(t *testing.T) {
	docker := EngineFacts{Engine: EngineDocker, Version: "24.0.7", APIVersion: "1.43", InfoKnown: true}
	sel := nvidiaGPUs(1)
	nv, _ := access(GPUAccess{Vendor: gpu.VendorNVIDIA, System: sel}, sel)
	c := GPUDevicesCheck(docker, nv, nil)
	if len(c) < 1 || !c[0].OK || c[0].Name != "gpu devices" || !strings.HasPrefix(c[0].Detail, "nvidia device request on Docker 24.0.7, Engine API 1.43: ") ||
		!strings.Contains(c[0].Detail, "Engine API 1.43 has no CDI devices") {
		t.Errorf("%+v", c)
	}
	podman := EngineFacts{Engine: EnginePodman, Version: "4.3.1", APIVersion: "1.41", Rootless: true}
	if c := GPUDevicesCheck(podman, nv, nil); c[0].OK || !strings.Contains(c[0].Detail, "drops the NVIDIA device request") {
		t.Errorf("%+v", c)
	}
	if c := GPUDevicesCheck(podman, amdNode(2), nil); len(c) != 1 || !c[0].OK || !strings.Contains(c[0].Detail, "keep-groups") {
		t.Errorf("%+v", c)
	}
	if c := GPUDevicesCheck(podman, GPUAccess{Vendor: manifest.VendorNone}, nil); c != nil {
		t.Errorf("%+v", c)
	}
}

// On rootless Podman the AMD GPUs need keep-groups, which Podman takes only alone: every
// benchmark's own groups count, a MAD model's additional_docker_run_options --group-add
// video among them (it gives that benchmark a container of its own), not only the
// manifest's container.groupAdd. The error names the benchmark, before any container, in
// and is invalid input.
func TestKeepGroupsRefusesEveryBenchmarksGroups(t *testing.T) {
	rootless := fakeVersion{v: client.ServerVersionResult{Version: "5.4.1", APIVersion: "1.41", Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "5.4.1"}}},
		info: system.Info{SecurityOptions: []string{"name=seccomp,profile=default", "name=rootless"}}}
	acc := amdNode(2)
	own := manifest.Container{Network: "host", GroupAdd: []string{"video"}}
	benches := []manifest.Benchmark{
		{Name: "plain", Command: []string{"/run"}},
		{Name: "pyt_vllm", Command: []string{"/run"}, Model: &manifest.Model{Catalog: "models.json"}, Container: &own},
	}
	m := &manifest.Manifest{Name: "t", Benchmarks: benches}
	r := &nodeRun{o: Options{Manifest: m}, benches: benches, log: slog.New(slog.DiscardHandler)}
	g := &nodeGPUs{GPUAccess: acc, access: []GPUAccess{acc, acc}}
	err := r.engineGPUs(context.Background(), rootless, g)
	var ge *GPUError
	if !errors.As(err, &ge) || !ge.InvalidInput() || !strings.Contains(err.Error(), "benchmark pyt_vllm") ||
		!strings.Contains(err.Error(), "[video]") || !strings.Contains(err.Error(), "additional_docker_run_options") {
		t.Fatalf("run: %v", err)
	}
	// Without the model's groups every benchmark gets keep-groups alone.
	benches[1].Container = &manifest.Container{Network: "host"}
	g = &nodeGPUs{GPUAccess: acc, access: []GPUAccess{acc, acc}}
	if err := r.engineGPUs(context.Background(), rootless, g); err != nil || fmt.Sprint(g.access[1].GroupAdd) != "[keep-groups]" {
		t.Fatalf("no groups: %v %v", err, g.access[1].GroupAdd)
	}
	// doctor checks each benchmark's groups too.
	benches[1].Container = &own
	facts := EngineFacts{Engine: EnginePodman, Version: "5.4.1", APIVersion: "1.41", Rootless: true, InfoKnown: true}
	if c := GPUDevicesCheck(facts, acc, m); len(c) != 1 || c[0].OK || !strings.Contains(c[0].Detail, "benchmark pyt_vllm") {
		t.Errorf("doctor: %+v", c)
	}
}

// Two selected GPUs on one render node is a stale or wrong inventory, not one device to
// share: an error naming both GPUs and the node.
func TestTwoGPUsOnOneRenderNode(t *testing.T) {
	h := gpuHost{groupFile: "/nonexistent", statGID: func(string) (uint32, error) { return 44, nil }}
	_, _, err := h.amdDevices([]gpu.GPU{{Index: 1, PCIBusID: "0000:22:00.0", RenderNode: "/dev/dri/renderD129"}, {Index: 3, PCIBusID: "0000:5c:00.0", RenderNode: "/dev/dri/renderD129"}})
	var ge *GPUError
	if !errors.As(err, &ge) || !strings.Contains(err.Error(), "GPU 1 (0000:22:00.0)") || !strings.Contains(err.Error(), "GPU 3 (0000:5c:00.0)") || !strings.Contains(err.Error(), "/dev/dri/renderD129") {
		t.Fatalf("%v", err)
	}
}

// Facts is the engine's, as its runtime tells them.
func (f fakeVersion) Facts(ctx context.Context) (workload.Facts, error) { return engine.Facts(ctx, f) }

// An engine whose /info failed is not one whose CDI is off: the facts say /info is not
// known and why, and the gpu devices line says so (NVIDIA still takes the device request,
// as the run would).
func TestGPUDevicesWithoutInfo(t *testing.T) {
	v := client.ServerVersionResult{Version: "28.0.1", APIVersion: "1.48"}
	f := factsOf(v, client.SystemInfoResult{}, errors.New("info: boom"))
	if f.InfoKnown || f.CDISpecDirs != nil || f.InfoProblem != "info: boom" {
		t.Fatalf("facts %+v", f)
	}
	sel := nvidiaGPUs(1)
	nv, _ := access(GPUAccess{Vendor: "nvidia", System: sel}, sel)
	c := GPUDevicesCheck(f, nv, nil)
	if len(c) < 1 || strings.Contains(c[0].Detail, "CDI is off") || !strings.Contains(c[0].Detail, "/info could not be read (info: boom)") {
		t.Errorf("%+v", c)
	}
	// The run's facts alike: an engine without /info is not taken for one with CDI off.
	if _, path, _ := gpupath.NVIDIARequests(EngineFacts{Engine: EngineDocker, Version: "28.0.1", APIVersion: "1.48"}, gpu.CDISpecs{}, sel); strings.Contains(path.Why, "CDI is off") || !strings.Contains(path.Why, "/info could not be read") {
		t.Errorf("run: %s", path.Why)
	}
	if f := factsOf(v, client.SystemInfoResult{}, nil); !f.InfoKnown {
		t.Errorf("answered /info: %+v", f)
	}
}
