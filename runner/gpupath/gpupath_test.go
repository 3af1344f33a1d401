package gpupath

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

func nvidiaGPUs(n int) []gpu.GPU {
	uuids := []string{"GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c", "GPU-0a7e7c6b-3f0e-55b1-9c1e-2f4c8d7b6a10", "GPU-ffffffff-0000-0000-0000-000000000002"}
	out := make([]gpu.GPU, n)
	for i := range out {
		out[i] = gpu.GPU{Index: i, UUID: uuids[i], NUMANode: -1}
	}
	return out
}

// engineFactsOfAPI is the run's facts of a version answer and, when not nil, an /info answer.
func engineFactsOfAPI(v client.ServerVersionResult, info *client.SystemInfoResult) EngineFacts {
	return EngineFactsOf(engine.FactsOf(v, info, nil))
}

// infoFacts are the facts an /info answer gives.
func infoFacts(info *client.SystemInfoResult) *workload.Facts {
	f := engine.FactsOf(client.ServerVersionResult{}, info, nil)
	return &f
}

// Which way NVIDIA GPUs take, as a function of the engine, its version and Engine API
// version, the CDI specs recorded under gpu/testdata/cdi and the selected GPUs.
func TestNVIDIARequestsByEngineAndSpecs(t *testing.T) {
	spec := func(tree string) gpu.CDISpecs { return gpu.ReadCDISpecs("../../gpu/testdata/cdi/"+tree, nil) }
	docker := func(v, api string, cdi bool) EngineFacts {
		f := EngineFacts{Engine: EngineDocker, Version: v, APIVersion: api, InfoKnown: true}
		if cdi {
			f.CDISpecDirs = []string{"/etc/cdi", "/var/run/cdi"}
		}
		return f
	}
	podman := EngineFacts{Engine: EnginePodman, Version: "5.4.2", APIVersion: "1.41", InfoKnown: true}
	old := EngineFacts{Engine: EnginePodman, Version: "4.3.1", APIVersion: "1.41", InfoKnown: true}
	u0, u1 := nvidiaGPUs(2)[0].UUID, nvidiaGPUs(2)[1].UUID
	nv := func(ids ...string) []workload.GPURequest {
		return []workload.GPURequest{{Driver: "nvidia", DeviceIDs: ids, Capabilities: [][]string{{"gpu"}}}}
	}
	cdi := func(ids ...string) []workload.GPURequest {
		for i := range ids {
			ids[i] = "nvidia.com/gpu=" + ids[i]
		}
		return []workload.GPURequest{{Driver: "cdi", DeviceIDs: ids}}
	}
	cases := []struct {
		name  string
		f     EngineFacts
		specs string
		gpus  []gpu.GPU
		want  []workload.GPURequest
		why   string // in the path's Why, or the error
	}{
		{"docker 28, specs by index", docker("28.0.1", "1.48", true), "index", nvidiaGPUs(2), cdi("0", "1"), "name every selected GPU"},
		{"docker 28, specs by uuid", docker("28.0.1", "1.48", true), "uuid", nvidiaGPUs(2)[1:], cdi(u1), "CDI devices"},
		{"both names: the UUID", docker("27.3.1", "1.47", true), "json", nvidiaGPUs(2), cdi(u0, u1), "CDI devices"},
		{"docker 25 exactly", docker("25.0.0", "1.44", true), "index", nvidiaGPUs(1), cdi("0"), "CDI devices"},
		{"API 1.43", docker("24.0.7", "1.43", true), "index", nvidiaGPUs(2), nv(u0, u1), "Engine API 1.43 has no CDI devices"},
		{"CDI off", docker("26.1.4", "1.45", false), "index", nvidiaGPUs(2), nv(u0, u1), "CDI is off"},
		{"no spec for GPU 2", docker("28.0.1", "1.48", true), "index", nvidiaGPUs(3), nv(u0, u1, "GPU-ffffffff-0000-0000-0000-000000000002"), "names GPU 2 (GPU-ffffffff"},
		{"no specs at all", docker("28.0.1", "1.48", true), "none", nvidiaGPUs(1), nv(u0), "no CDI spec in /etc/cdi, /var/run/cdi names GPU 0"},
		{"bad specs only", docker("28.0.1", "1.48", true), "malformed", nvidiaGPUs(2), cdi("0", "1"), "CDI devices"},
		{"podman 5.4", podman, "uuid", nvidiaGPUs(2), cdi(u0, u1), "Podman 5.4.2, Engine API 1.41 takes them"},
		{"podman 5.4 without specs", podman, "none", nvidiaGPUs(1), nil, "drops the NVIDIA device request"},
		{"podman 4.3", old, "index", nvidiaGPUs(1), nil, "Podman 4.3.1 takes CDI devices through the Engine API only from 5.4, and Podman's Engine API drops the NVIDIA device request (the container would start without GPUs); upgrade Podman to 5.4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqs, path, err := NVIDIARequests(c.f, spec(c.specs), c.gpus)
			if c.want == nil {
				var ge *GPUError
				if !errors.As(err, &ge) || !strings.Contains(err.Error(), c.why) {
					t.Fatalf("got %v %v, want a *GPUError with %q", reqs, err, c.why)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(reqs, c.want) || !strings.Contains(path.Why, c.why) {
				t.Fatalf("got %+v %q %v\nwant %+v, why with %q", reqs, path.Why, err, c.want, c.why)
			}
		})
	}
	if _, path, _ := NVIDIARequests(docker("28.0.1", "1.48", true), spec("malformed"), nvidiaGPUs(1)); len(path.SpecProblems) != 4 {
		t.Errorf("spec problems %q", path.SpecProblems)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"5.4.0": true, "5.4": true, "5.10.1": true, "6.0.0-dev": true, "5.4.0-rc1": true, "v5.4.0": true,
		"5.3.2": false, "4.9.4": false, "": false, "x.y": false, "5": false, "5.x": false} {
		if versionAtLeast(v, 5, 4) != want {
			t.Errorf("%q >= 5.4: %v", v, !want)
		}
	}
	if !versionAtLeast("1.44", 1, 44) || versionAtLeast("1.43", 1, 44) || !versionAtLeast("1.100", 1, 44) {
		t.Error("API versions")
	}
}

// Which engine answered, from the version's components, and rootless and the CDI folders
// from /info.
func TestEngineFactsOf(t *testing.T) {
	pv := client.ServerVersionResult{Version: "4.3.1", APIVersion: "1.41", Components: []system.ComponentVersion{
		{Name: "Podman Engine", Version: "4.3.1"}, {Name: "Conmon", Version: "2.1.6"}}}
	info := &client.SystemInfoResult{Info: system.Info{SecurityOptions: []string{"name=seccomp,profile=default", "name=rootless"}}}
	f := engineFactsOfAPI(pv, info)
	if f.Engine != EnginePodman || f.Version != "4.3.1" || !f.Rootless || !f.InfoKnown || f.String() != "Podman 4.3.1 (rootless), Engine API 1.41" {
		t.Errorf("%+v %s", f, f)
	}
	dv := client.ServerVersionResult{Version: "28.0.1", APIVersion: "1.48", Components: []system.ComponentVersion{{Name: "Engine", Version: "28.0.1"}}}
	f = engineFactsOfAPI(dv, &client.SystemInfoResult{Info: system.Info{CDISpecDirs: []string{"/etc/cdi"}}})
	if f.Engine != EngineDocker || f.Rootless || len(f.CDISpecDirs) != 1 || f.String() != "Docker 28.0.1, Engine API 1.48" {
		t.Errorf("%+v", f)
	}
	if f := engineFactsOfAPI(dv, nil); f.InfoKnown || f.CDISpecDirs != nil {
		t.Errorf("%+v", f)
	}
}

// Podman's Docker-compatible /info names no rootless security option (Podman 4.3 here):
// the facts take rootless from image.Identify, which asks Podman's own API, so that a
// rootless Podman's AMD containers get keep-groups.
func TestFactsTakeRootlessFromTheIdentity(t *testing.T) {
	pv := client.ServerVersionResult{Version: "4.3.1", APIVersion: "1.41", Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}}
	info := &client.SystemInfoResult{Info: system.Info{SecurityOptions: []string{"name=seccomp,profile=default"}}}
	id := image.Identity{Kind: image.KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41", Rootless: true}
	if f := engineFactsOfAPI(pv, info).WithIdentity(id); f.Engine != EnginePodman || !f.Rootless || !f.InfoKnown {
		t.Errorf("run's facts: %+v", f)
	}
	if f := FactsOfIdentity(id, infoFacts(info)); f.Engine != EnginePodman || !f.Rootless || !f.InfoKnown || f.Version != "4.3.1" || f.APIVersion != "1.41" {
		t.Errorf("doctor's facts: %+v", f)
	}
	if f := FactsOfIdentity(image.Identity{Kind: image.KindDocker, Version: "28.0.1", APIVersion: "1.48"},
		infoFacts(&client.SystemInfoResult{Info: system.Info{CDISpecDirs: []string{"/etc/cdi"}}})); f.Engine != EngineDocker || f.Rootless || len(f.CDISpecDirs) != 1 {
		t.Errorf("docker: %+v", f)
	}
	if f := (EngineFacts{Engine: EngineDocker}).WithIdentity(image.Identity{}); f.Engine != EngineDocker || f.Rootless {
		t.Errorf("unknown identity changed the facts: %+v", f)
	}
}

// A CDI device named by index is checked against the GPU's device file where the inventory
// knows its minor: a stale spec (GPUs renumbered since nvidia-ctk wrote it) must not hand
// a container another GPU, so CDI is refused and the device request taken, with the reason.
func TestStaleCDISpecFallsBack(t *testing.T) {
	specs := gpu.ReadCDISpecs("../../gpu/testdata/cdi/index", nil) // gpu=0 is /dev/nvidia0, gpu=1 /dev/nvidia1
	docker := EngineFacts{Engine: EngineDocker, Version: "28.0.1", APIVersion: "1.48", InfoKnown: true, CDISpecDirs: []string{"/etc/cdi"}}
	sel := nvidiaGPUs(2)
	sel[0].UUID, sel[1].UUID = "", ""
	sel[0].Devices = []string{"/dev/nvidia0", "/dev/nvidiactl"}
	sel[1].Devices = []string{"/dev/nvidia1", "/dev/nvidiactl"}
	if reqs, path, err := NVIDIARequests(docker, specs, sel); err != nil || path.Way != "cdi" || reqs[0].Driver != "cdi" {
		t.Fatalf("matching spec: %+v %+v %v", reqs, path, err)
	}
	sel[1].Devices = []string{"/dev/nvidia5", "/dev/nvidiactl"}
	reqs, path, err := NVIDIARequests(docker, specs, sel)
	if err != nil || path.Way != "nvidia device request" || reqs[0].Driver != "nvidia" || !slices.Equal(reqs[0].DeviceIDs, []string{"0", "1"}) ||
		!strings.Contains(path.Why, "nvidia.com/gpu=1") || !strings.Contains(path.Why, "/dev/nvidia1") || !strings.Contains(path.Why, "/dev/nvidia5") {
		t.Fatalf("stale spec: %+v %+v %v", reqs, path, err)
	}
	// Podman has no device request to fall back on: an error with the reason.
	podman := EngineFacts{Engine: EnginePodman, Version: "5.4.1", APIVersion: "1.41", InfoKnown: true}
	if _, _, err := NVIDIARequests(podman, specs, sel); err == nil || !strings.Contains(err.Error(), "/dev/nvidia5") {
		t.Fatalf("podman: %v", err)
	}
	// The minor unknown: nothing to check against.
	sel[1].Devices = nil
	if _, path, err := NVIDIARequests(docker, specs, sel); err != nil || path.Way != "cdi" {
		t.Fatalf("no minor: %+v %v", path, err)
	}
}
