package slurm

import (
	"slices"
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
