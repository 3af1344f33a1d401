package slurm

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/scheduler"
)

// sbatchSays is a Commander whose sbatch prints out (and records its arguments).
type sbatchSays struct {
	out  string
	args *[]string
}

func (s sbatchSays) Output(_ context.Context, name string, args ...string) ([]byte, error) {
	*s.args = append([]string{name}, args...)
	return []byte(s.out), nil
}

func submission(t *testing.T) scheduler.Submission {
	t.Helper()
	gpus := 2
	m := &manifest.Manifest{Name: "allreduce", Path: "/m/allreduce.yaml", Slurm: manifest.Slurm{Nodes: 2, Partition: "gpu", GPUsPerNode: &gpus}}
	return scheduler.Submission{Manifest: m, Benchctl: "/opt/benchctl", SharedDir: t.TempDir(), Benchmarks: []string{"a"}}
}

// A submission becomes the sbatch job of Overrides, then the manifest's slurm: block: the
// dry run shows it without writing anything, Submit writes the secret and the script in
// jobs/.submit and runs sbatch on it.
func TestSubmitterMakesTheSbatchJob(t *testing.T) {
	sub := submission(t)
	nodes := 4
	s := Submitter{Overrides: Overrides{Nodes: &nodes}}
	plan, err := s.DryRun(sub)
	if err != nil {
		t.Fatal(err)
	}
	doc := plan.Document.(DryRunDocument)
	argv := strings.Join(doc.Sbatch, " ")
	if !strings.Contains(argv, "--nodes=4") || !strings.Contains(argv, "--partition=gpu") || !strings.Contains(argv, "--gpus-per-node=2") ||
		!strings.Contains(doc.Script, "/opt/benchctl") || !strings.HasPrefix(plan.Text, "# sbatch --parsable ") || !strings.HasSuffix(plan.Text, doc.Script) {
		t.Fatalf("dry run:\n%s\n%+v", plan.Text, doc)
	}
	if _, err := os.Stat(jobdir.Layout{Shared: sub.SharedDir}.Submit()); err == nil {
		t.Fatal("the dry run wrote the submission folder")
	}

	var args []string
	s.Run = sbatchSays{out: "4242;cluster\n", args: &args}
	done, err := s.Submit(context.Background(), sub)
	if err != nil || done.Job != "4242" || done.Nodes != 4 || done.Token == "" {
		t.Fatalf("%+v, %v", done, err)
	}
	files := jobdir.Layout{Shared: sub.SharedDir}.SubmitFiles(done.Token)
	if done.Request != files.Script || args[0] != "sbatch" || args[len(args)-1] != files.Script {
		t.Fatalf("sbatch %v, request %s, files %+v", args, done.Request, files)
	}
	if fi, err := os.Stat(files.Secret); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret: %v %v", fi, err)
	}
}

// Options sbatch would refuse are bad input (exit 4) before anything is written or run.
func TestSubmitterRefusesBadOptions(t *testing.T) {
	sub := submission(t)
	bad := "gpu;rm -rf /"
	var args []string
	s := Submitter{Scheduler: Scheduler{Run: sbatchSays{out: "1\n", args: &args}}, Overrides: Overrides{Partition: &bad}}
	if _, err := s.DryRun(sub); exitcode.Of(err) != exitcode.Invalid {
		t.Fatalf("dry run: %v", err)
	}
	if _, err := s.Submit(context.Background(), sub); exitcode.Of(err) != exitcode.Invalid || args != nil {
		t.Fatalf("submit: %v, sbatch ran %v", err, args)
	}
	if _, err := os.Stat(jobdir.Layout{Shared: sub.SharedDir}.Submit()); err == nil {
		t.Fatal("a refused submission wrote its files")
	}
}

// A Slurm epilog names the job and the node that cleanup ends; without SLURM_JOB_ID this
// is no epilog.
func TestEpilogNode(t *testing.T) {
	env := func(m map[string]string) scheduler.Lookup {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if job, host, ok := (Scheduler{}).EpilogNode(env(map[string]string{"SLURM_JOB_ID": "12", "SLURMD_NODENAME": "n3"})); !ok || job != "12" || host != "n3" {
		t.Fatalf("%q %q %v", job, host, ok)
	}
	if _, _, ok := (Scheduler{}).EpilogNode(env(map[string]string{"SLURMD_NODENAME": "n3"})); ok {
		t.Fatal("no SLURM_JOB_ID, yet an epilog")
	}
	if job, _, ok := scheduler.EpilogNode(env(map[string]string{"SLURM_JOB_ID": "12"}), Scheduler{}); !ok || job != "12" {
		t.Fatalf("through the seam: %q %v", job, ok)
	}
}

// A job that runs as processes passes --runtime to every node's run and to the cleanup
// step, which then finds the job's process groups instead of containers.
func TestSubmitterPassesTheRuntime(t *testing.T) {
	sub := submission(t)
	sub.Runtime = "process"
	plan, err := Submitter{}.DryRun(sub)
	if err != nil {
		t.Fatal(err)
	}
	script := plan.Document.(DryRunDocument).Script
	for _, step := range []string{" run ", " cleanup "} {
		found := false
		for _, line := range strings.Split(script, "\n") {
			if strings.Contains(line, "/opt/benchctl"+step) && strings.Contains(line, "--runtime process") {
				found = true
			}
		}
		if !found {
			t.Errorf("no%sline with --runtime process:\n%s", step, script)
		}
	}
	sub.Runtime = "process\nrm -rf /"
	if _, err := (Submitter{}).DryRun(sub); err == nil {
		t.Fatal("a runtime with a line break reached the script")
	}
}
