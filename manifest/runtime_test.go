package manifest

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
)

// runtime: process takes a manifest with no image at all, an image.ref (what the
// environment is), mounts of a path onto itself and ulimits.
func TestRuntimeProcessTakes(t *testing.T) {
	for name, body := range map[string]string{
		"no image":    "name: t\nruntime: process\nbenchmarks: [{name: b, command: [\"true\"]}]\n",
		"image.ref":   "name: t\nruntime: process\nimage: {ref: nvcr.io/nvidia/pytorch:24.05-py3}\nbenchmarks: [{name: b, command: [\"true\"]}]\n",
		"the rest":    "name: t\nruntime: process\nmounts: [\"/data:/data\"]\ncontainer: {network: host, ipc: host, ulimits: {memlock: -1}}\nbenchmarks: [{name: b, command: [\"true\"]}]\n",
		"engine, too": "name: t\nruntime: engine\nimage: {ref: busybox}\nbenchmarks: [{name: b, command: [\"true\"]}]\n",
	} {
		m, _, err := Parse("m.yaml", "/x/m.yaml", []byte(body), Options{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := strings.Contains(body, "process"); m.Process() != want {
			t.Errorf("%s: Process() %v", name, m.Process())
		}
	}
}

// What has no meaning without an engine is refused with runtime: process, naming the field
// and its line, and saying what to do instead: exit 4.
func TestRuntimeProcessRefuses(t *testing.T) {
	const bench = "benchmarks: [{name: b, command: [\"true\"]}]\n"
	for _, c := range []struct{ body, want string }{
		{"image: {dockerfile: Dockerfile}\n" + bench, "m.yaml:3: image.dockerfile: the process runtime builds no image"},
		{"image: {ref: x}\nmounts: [\"/data:/workspace\"]\n" + bench, "mounts[0]: /data:/workspace: a process sees the node's own files"},
		{"container: {network: bridge}\n" + bench, "container.network: bridge: a process uses the node's network"},
		{"container: {ipc: private}\n" + bench, "container.ipc: private"},
		{"container: {shmSize: 16g}\n" + bench, "container.shmSize: a process uses the node's /dev/shm"},
		{"container: {user: \"1000\"}\n" + bench, "container.user: a process runs as benchctl's user"},
		{"container: {capAdd: [SYS_PTRACE]}\n" + bench, "container.capAdd"},
		{"container: {devices: [/dev/kfd]}\n" + bench, "container.devices: a process sees the node's devices"},
		{"engine: podman\n" + bench, "engine: podman: the process runtime uses no container engine"},
		{"distribution: stream\n" + bench, "distribution: stream: the process runtime distributes no image"},
		{"runtime: vm\n" + bench, "runtime: \"vm\" is not a runtime benchctl knows (allowed: engine, process)"},
	} {
		body := "name: t\nruntime: process\n" + c.body
		if strings.HasPrefix(c.body, "runtime:") {
			body = "name: t\nimage: {ref: x}\n" + c.body
		}
		_, _, err := Load(writeManifest(t, "m.yaml", body), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || exitcode.Of(err) != exitcode.Invalid {
			t.Errorf("%q:\n got %v\nwant %q", c.body, err, c.want)
		}
	}
}

// A manifest loaded for the engine, run with --runtime process, is checked the same way.
func TestProcessRefusalsOfALoadedManifest(t *testing.T) {
	m, _, err := Load(writeManifest(t, "m.yaml", "name: t\nimage: {dockerfile: Dockerfile}\nengine: docker\n"+
		"benchmarks: [{name: b, command: [\"true\"], image: {dockerfile: Dockerfile}}]\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, r := range m.ProcessRefusals() {
		fields = append(fields, r.Field)
	}
	if got := strings.Join(fields, " "); got != "image.dockerfile benchmarks[0].image.dockerfile engine" {
		t.Fatalf("refusals %q", got)
	}
	if len((&Manifest{}).ProcessRefusals()) != 0 {
		t.Fatal("an empty manifest is refused")
	}
}

// A MAD model's Dockerfile and docker options are its catalog's recipe for the environment a
// process runs in already: not refused (the runner says what it does not apply). The same
// settings a user wrote for a benchmark of their own are refused.
func TestCatalogModelsUnderTheProcessRuntime(t *testing.T) {
	model := Benchmark{Name: "pyt_vllm", Model: &Model{Catalog: "/mad/models.json"}, Image: &Image{Dockerfile: "/mad/docker/pyt_vllm.ubuntu.amd.Dockerfile"},
		Container: &Container{IPC: "private", CapAdd: []string{"SYS_PTRACE"}}, Mounts: []Mount{{Source: "/mad", Target: "/myworkspace"}}}
	own := model
	own.Name, own.Model = "mine", nil
	m := &Manifest{Benchmarks: []Benchmark{model}}
	if err := m.SetRuntime(RuntimeProcess); err != nil || !m.Process() {
		t.Fatalf("a MAD model refused: %v", err)
	}
	m = &Manifest{Benchmarks: []Benchmark{model, own}}
	err := m.SetRuntime(RuntimeProcess)
	if err == nil || strings.Contains(err.Error(), "benchmarks[0]") || !strings.Contains(err.Error(), "benchmarks[1].image.dockerfile") ||
		!strings.Contains(err.Error(), "benchmarks[1].container.capAdd") || !strings.Contains(err.Error(), "benchmarks[1].mounts[0]") {
		t.Fatalf("a benchmark of the user's own: %v", err)
	}
}
