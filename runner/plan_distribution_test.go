package runner

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"

	"github.com/benchctl/benchctl/manifest"
)

// The dry run on a node of a several-node job says how the other nodes would get each
// image; on a one-node job it says nothing of it.
func TestPlanSaysHowImagesReachTheNodes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/Dockerfile", []byte("FROM scratch\n"), 0o644)
	slurm := map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "3",
		"SLURM_STEP_NUM_NODES": "3", "SLURM_STEP_NODELIST": "gpu-[07-09]", "SLURMD_NODENAME": "gpu-07"}
	env := map[string]string{"NODE_RANK": "0", "NNODES": "3", "MASTER_ADDR": "gpu-07", "MASTER_PORT": "29500", "BENCHCTL_JOB_ID": "j77"}
	for _, c := range []struct {
		dist, image string
		lookup      map[string]string
		want        string
	}{
		{"", "{dockerfile: Dockerfile}", slurm, "auto: rank 0 streams it to the other nodes as it saves it"},
		{"", "{dockerfile: Dockerfile}", env, "auto, without Slurm's node list to stream along: the other nodes load it from the shared cache"},
		{"cache", "{dockerfile: Dockerfile}", slurm, "cache: the other nodes load it from the shared cache"},
		{"stream", "{ref: busybox}", slurm, "stream: rank 0 streams it"},
		{"", "{ref: busybox}", slurm, "auto: if rank 0 has to pull it, it streams it to the others"},
		{"registry", "{ref: busybox}", slurm, "registry: every node pulls it"},
		{"", "{dockerfile: Dockerfile}", nil, ""},
	} {
		body := "name: t\nimage: " + c.image + "\ngpu: {vendor: none}\nbenchmarks: [{name: b, command: [x]}]\n"
		if c.dist != "" {
			body += "distribution: " + c.dist + "\n"
		}
		m, _, err := manifest.Parse("m.yaml", dir+"/m.yaml", []byte(body), manifest.Options{Lookup: testutil.LookupOf(nil)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Plan(context.Background(), Options{Node: nodeOf(t, testutil.LookupOf(c.lookup)), Manifest: m, SharedDir: dir, Lookup: testutil.LookupOf(c.lookup)})
		if err != nil {
			t.Fatal(err)
		}
		got := p.Images[0].Distribution
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s (world %d): %q, want %q…", c.dist, c.image, p.Node.World, got, c.want)
		}
	}
}
