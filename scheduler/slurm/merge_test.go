package slurm

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func TestJobForPrecedence(t *testing.T) {
	four := 4
	m := &manifest.Manifest{Name: "m", Path: "/x/m.yaml", Slurm: manifest.Slurm{Nodes: 2, Partition: "gpu", Time: "01:00:00",
		GPUsPerNode: &four, Exclusive: true, SbatchArgs: []string{"--constraint=mi300x"}}}
	j := JobFor(m, Overrides{})
	if j.Nodes != 2 || j.Partition != "gpu" || *j.GPUsPerNode != 4 || !j.Exclusive || j.Name != "benchctl-m" || j.Manifest != "/x/m.yaml" {
		t.Fatalf("manifest values: %+v", j)
	}
	eight, zero, no, part, empty := 8, 0, false, "debug", ""
	j = JobFor(m, Overrides{Nodes: &eight, Partition: &part, Time: &empty, GPUsPerNode: &zero, Exclusive: &no, SbatchArgs: []string{"--mem=0"}})
	if j.Nodes != 8 || j.Partition != "debug" || j.Time != "" || *j.GPUsPerNode != 0 || j.Exclusive ||
		!slices.Equal(j.SbatchArgs, []string{"--constraint=mi300x", "--mem=0"}) {
		t.Fatalf("flags win: %+v", j)
	}
	if !slices.Equal(m.Slurm.SbatchArgs, []string{"--constraint=mi300x"}) || *m.Slurm.GPUsPerNode != 4 {
		t.Fatal("the manifest was changed")
	}
}

// Without slurm.gpusPerNode or --gpus-per-node, the job asks Slurm for the GPUs the
// manifest needs: gpu.count, else the most n_gpus of the selected MAD models; "all" (a
// count of all, a model on all of the node's GPUs, gpu.vendor none) asks nothing; 0 in
// the manifest or on the command line turns it off (sites that ask with --gres).
func TestJobForAsksForTheManifestsGPUs(t *testing.T) {
	model := func(name, n string) manifest.Benchmark {
		return manifest.Benchmark{Name: name, Model: &manifest.Model{NGPUs: n}}
	}
	zero, four := 0, 4
	for _, c := range []struct {
		name    string
		gpu     manifest.GPU
		slurm   *int
		flag    *int
		benches []manifest.Benchmark
		want    int // 0: no --gpus-per-node
	}{
		{"gpu.count", manifest.GPU{Vendor: "amd", Count: 8}, nil, nil, nil, 8},
		{"gpu.count, vendor auto", manifest.GPU{Vendor: "auto", Count: 2}, nil, nil, nil, 2},
		{"gpu.count all", manifest.GPU{Vendor: "amd"}, nil, nil, nil, 0},
		{"vendor none", manifest.GPU{Vendor: "none", Count: 8}, nil, nil, nil, 0},
		{"the manifest's slurm.gpusPerNode", manifest.GPU{Vendor: "amd", Count: 8}, &four, nil, nil, 4},
		{"slurm.gpusPerNode: 0", manifest.GPU{Vendor: "amd", Count: 8}, &zero, nil, nil, 0},
		{"--gpus-per-node 0", manifest.GPU{Vendor: "amd", Count: 8}, nil, &zero, nil, 0},
		{"n_gpus: the most", manifest.GPU{Vendor: "amd"}, nil, nil, []manifest.Benchmark{model("a", "2"), model("b", "4"), {Name: "c"}}, 4},
		{"n_gpus -1: all", manifest.GPU{Vendor: "amd"}, nil, nil, []manifest.Benchmark{model("a", "2"), model("b", "-1")}, 0},
		{"n_gpus with gpu.count", manifest.GPU{Vendor: "amd", Count: 8}, nil, nil, []manifest.Benchmark{model("a", "2")}, 8},
	} {
		m := &manifest.Manifest{Name: "m", GPU: c.gpu, Slurm: manifest.Slurm{GPUsPerNode: c.slurm}, Benchmarks: c.benches}
		j := JobForBenchmarks(m, m.Benchmarks, Overrides{GPUsPerNode: c.flag})
		got := 0
		if j.GPUsPerNode != nil {
			got = *j.GPUsPerNode
		}
		argv := j.SbatchArgv()
		has := slices.ContainsFunc(argv, func(a string) bool { return a == "--gpus-per-node="+itoa(c.want) })
		if got != c.want || (c.want > 0) != has {
			t.Errorf("%s: GPUsPerNode %d, sbatch %v; want %d", c.name, got, argv, c.want)
		}
	}
	// --benchmarks: only the selected models count.
	m := &manifest.Manifest{Name: "m", GPU: manifest.GPU{Vendor: "amd"}, Benchmarks: []manifest.Benchmark{model("a", "2"), model("b", "8")}}
	if j := JobForBenchmarks(m, m.Benchmarks[:1], Overrides{}); j.GPUsPerNode == nil || *j.GPUsPerNode != 2 {
		t.Errorf("selected a only: %v", j.GPUsPerNode)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A models.json whose n_gpus no node has (2e9) is refused before sbatch, as is the flag.
func TestValidateRefusesMoreGPUsThanANodeHas(t *testing.T) {
	m := &manifest.Manifest{Name: "m", GPU: manifest.GPU{Vendor: "amd"},
		Benchmarks: []manifest.Benchmark{{Name: "a", Model: &manifest.Model{NGPUs: "2000000000"}}}}
	j := JobFor(m, Overrides{})
	j.Nodes = 1
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "--gpus-per-node 2000000000") {
		t.Errorf("n_gpus 2e9: %v", err)
	}
	big := 1025
	j = JobFor(&manifest.Manifest{Name: "m"}, Overrides{GPUsPerNode: &big})
	j.Nodes = 1
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "--gpus-per-node 1025") {
		t.Errorf("--gpus-per-node 1025: %v", err)
	}
}
