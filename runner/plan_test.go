package runner

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

// The dry run prints secrets as ***: a secret, an env value that takes a variable named like
// a credential (not listed under secrets), and a host variable with such a name that passEnv
// copies. No engine is needed: the image is used by ref.
func TestPlanNeverPrintsCredentials(t *testing.T) {
	token := "tok-" + strings.Repeat("x", 6000)
	dir := t.TempDir()
	body := "name: t\nimage: {ref: busybox}\ngpu: {vendor: none}\n" +
		"secrets: [HF_TOKEN]\npassEnv: [\"WANDB_*\", NCCL_DEBUG]\n" +
		"env: {AUTH_HEADER: \"Bearer ${API_TOKEN}\", HF_COPY: \"${HF_TOKEN}\", VERSION: \"${VERSION:-1}\"}\n" +
		"benchmarks: [{name: b, command: [x], env: {KEY: \"${OPENAI_API_KEY}\"}}]\n"
	host := map[string]string{"API_TOKEN": token, "HF_TOKEN": "hf-value", "OPENAI_API_KEY": "openai-value",
		"WANDB_API_KEY": "wandb-value", "NCCL_DEBUG": "INFO"}
	m, _, err := manifest.Parse("m.yaml", filepath.Join(dir, "m.yaml"), []byte(body), manifest.Options{Lookup: testutil.LookupOf(host)})
	if err != nil {
		t.Fatal(err)
	}
	var environ []string
	for k, v := range host {
		environ = append(environ, k+"="+v)
	}
	p, err := Plan(context.Background(), Options{Node: nodeOf(t, testutil.LookupOf(nil)), Manifest: m, SharedDir: dir, Lookup: testutil.LookupOf(nil), Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"tok-x", "hf-value", "openai-value", "wandb-value"} {
		if strings.Contains(string(out), v) {
			t.Errorf("the plan shows %s…: %.400s", v, out)
		}
	}
	if len(p.Containers) != 1 {
		t.Fatalf("containers %q", p.Containers)
	}
	run := p.Containers[0]
	for _, w := range []string{"-e 'AUTH_HEADER=***'", "-e 'HF_COPY=***'", "-e 'HF_TOKEN=***'", "-e 'KEY=***'", "-e 'WANDB_API_KEY=***'",
		"-e NCCL_DEBUG=INFO", "-e VERSION=1"} {
		if !strings.Contains(run, w) {
			t.Errorf("docker run line lacks %s: %.400s", w, run)
		}
	}
	// The container itself gets the values.
	spec := BuildSpec(m, m.Benchmarks[0], Node{JobID: "1", World: 1}, "busybox", "", "/r", GPUAccess{Vendor: "none"}, environ)
	cfg, _ := configOf(spec)
	if env := strings.Join(cfg.Env, "\n"); !strings.Contains(env, "AUTH_HEADER=Bearer "+token+"\n") || !strings.Contains(env, "KEY=openai-value") {
		t.Errorf("container env lacks the values")
	}
}

// The dry run shows an MPI benchmark as rank 0 runs it: the launcher's line around the
// command, the agent's settings.
func TestPlanShowsTheMPILine(t *testing.T) {
	dir := t.TempDir()
	body := "name: t\nimage: {ref: mpi:1}\ngpu: {vendor: none}\nbenchmarks: [{name: b, command: [ring, \"8\"], launcher: mpirun, ranksPerNode: 1}]\n"
	m, _, err := manifest.Parse("m.yaml", filepath.Join(dir, "m.yaml"), []byte(body), manifest.Options{Lookup: testutil.LookupOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Plan(context.Background(), Options{Node: nodeOf(t, testutil.LookupOf(nil)), Manifest: m, SharedDir: dir, Lookup: testutil.LookupOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Containers) != 1 || !strings.Contains(p.Containers[0], "--entrypoint /run/benchctl-agent/benchctl-agent mpi:1 launch mpirun -- -H localhost:1 -np 1 ring 8") ||
		!strings.Contains(p.Containers[0], "OMPI_MCA_plm_rsh_agent=/run/benchctl-agent/benchctl-agent") {
		t.Errorf("the plan: %v", p.Containers)
	}
}
