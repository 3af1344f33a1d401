package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// The manifest's launcher is the default of its benchmarks; a benchmark's own wins; none
// is "" (torchrun); madengine's alias is read as its canonical name.
func TestLauncherResolution(t *testing.T) {
	p := writeManifest(t, "m.yaml", "name: t\nimage: {dockerfile: Dockerfile}\nlauncher: deepspeed\nbenchmarks:\n"+
		"  - {name: a, command: [x]}\n  - {name: b, command: [x], launcher: vllm}\n  - {name: c, command: [x], launcher: sglang_disagg}\n")
	m, _, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, b := range m.Benchmarks {
		got = append(got, b.Launcher)
	}
	if strings.Join(got, " ") != "deepspeed vllm sglang-disagg" {
		t.Errorf("launchers %v", got)
	}
	p = writeManifest(t, "n.yaml", "name: t\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: a, command: [x]}]\n")
	if m, _, err = Load(p, Options{}); err != nil || m.Benchmarks[0].Launcher != "" {
		t.Errorf("no launcher: %q %v", m.Benchmarks[0].Launcher, err)
	}
}

func TestCanonicalLauncher(t *testing.T) {
	for in, want := range map[string]string{"": "", "torchrun": "torchrun", "megatron-lm": "megatron-lm",
		"slurm-multi": "slurm_multi", "sglang_disagg": "sglang-disagg"} {
		if got, ok := CanonicalLauncher(in); !ok || got != want {
			t.Errorf("%q: %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"Torchrun", " torchrun", "megatron", "docker", "native", "torch-run", strings.Repeat("x", 6000)} {
		if _, ok := CanonicalLauncher(in); ok {
			t.Errorf("%q accepted", in)
		}
		if msg := LauncherProblem(in); !strings.Contains(msg, "allowed: torchrun,") || len(msg) > 400 {
			t.Errorf("%q: %s", in, msg)
		}
	}
}

// The MPI launchers and ranksPerNode: the manifest's ranksPerNode is the default of its
// MPI benchmarks only; a benchmark's own wins; a non-MPI benchmark keeps 0.
func TestMPILaunchers(t *testing.T) {
	p := writeManifest(t, "m.yaml", "name: t\nimage: {dockerfile: Dockerfile}\nlauncher: mpirun\nranksPerNode: 2\nbenchmarks:\n"+
		"  - {name: a, command: [x]}\n  - {name: b, command: [x], launcher: mpiexec, ranksPerNode: 8}\n  - {name: c, command: [x], launcher: torchrun}\n")
	m, _, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, b := range m.Benchmarks {
		got = append(got, fmt.Sprintf("%s:%d", b.Launcher, b.RanksPerNode))
	}
	if strings.Join(got, " ") != "mpirun:2 mpiexec:8 torchrun:0" {
		t.Errorf("launchers %v", got)
	}
	if !MPILauncher("mpirun") || !MPILauncher("mpiexec") || MPILauncher("torchrun") || MPILauncher("") {
		t.Error("MPILauncher")
	}
}
