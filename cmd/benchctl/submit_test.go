package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// submit prints the job id; with -o json one object with the job, its node count, the
// script and the job folder (and with --dry-run, sbatch's arguments and the script).
func TestSubmitOutput(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	for name, body := range map[string]string{"sbatch": "#!/bin/sh\necho 4242\n", "squeue": "#!/bin/sh\nexit 0\n"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	shared := filepath.Join(dir, "shared")

	code, out, errs := run(t, "submit", "-m", mf, "--shared-dir", shared)
	if code != 0 || out != "4242\n" {
		t.Fatalf("table: exit %d, stdout %q\n%s", code, out, errs)
	}
	code, out, errs = run(t, "submit", "-m", mf, "--shared-dir", shared, "-o", "json")
	var got commands.Submitted
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("json: exit %d, stdout %q\n%s", code, out, errs)
	}
	script := got.Script
	if filepath.Dir(script) != (jobdir.Layout{Shared: shared}).Submit() || !strings.HasSuffix(script, ".sh") {
		t.Errorf("script %s", script)
	}
	want := "{\n  \"job\": \"4242\",\n  \"nodes\": 1,\n  \"script\": \"" + script + "\",\n  \"jobDir\": \"" + jobdir.Layout{Shared: shared}.Job("4242", 0).Path + "\"\n}\n"
	if out != want {
		t.Errorf("json:\n got %q\nwant %q", out, want)
	}

	code, out, errs = run(t, "submit", "-m", mf, "--shared-dir", shared, "--dry-run", "-o", "json")
	var dry slurm.DryRunDocument
	if code != 0 || json.Unmarshal([]byte(out), &dry) != nil || dry.Sbatch[0] != "--parsable" || !strings.HasPrefix(dry.Script, "#!/bin/bash\n") {
		t.Errorf("dry run: exit %d, stdout %q\n%s", code, out, errs)
	}
}

// The Slurm flags given override the manifest's slurm: block, each on its own (even to an
// empty or false value); a flag not given leaves the manifest's value.
func TestSubmitFlagsOverrideTheManifest(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"+
		"slurm: {nodes: 2, partition: gpu, account: acct, qos: high, time: \"01:00:00\", gpusPerNode: 8, exclusive: true, sbatchArgs: [--constraint=a]}\n"), 0o644)
	shared := filepath.Join(dir, "shared")
	manifestArgs := "--nodes=2 --partition=gpu --account=acct --qos=high --time=01:00:00 --gpus-per-node=8 --exclusive --constraint=a"
	for _, c := range []struct {
		flags []string
		want  string // sbatch's options after --output
	}{
		{nil, manifestArgs},
		{[]string{"-N", "3", "-p", "cpu"}, "--nodes=3 --partition=cpu --account=acct --qos=high --time=01:00:00 --gpus-per-node=8 --exclusive --constraint=a"},
		{[]string{"--account", "", "--qos=", "--time", "5", "--gpus-per-node", "0", "--exclusive=false", "--sbatch-arg=--mem=0"},
			"--nodes=2 --partition=gpu --time=5 --constraint=a --mem=0"},
	} {
		args := append([]string{"submit", "-m", mf, "--shared-dir", shared, "--dry-run", "-o", "json"}, c.flags...)
		code, out, errs := run(t, args...)
		var dry slurm.DryRunDocument
		if code != 0 || json.Unmarshal([]byte(out), &dry) != nil {
			t.Fatalf("%v: exit %d, stdout %q\n%s", c.flags, code, out, errs)
		}
		var got []string
		for _, a := range dry.Sbatch {
			if !strings.HasPrefix(a, "--parsable") && !strings.HasPrefix(a, "--job-name=") && !strings.HasPrefix(a, "--ntasks-per-node=") && !strings.HasPrefix(a, "--output=") {
				got = append(got, a)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%v: sbatch %s\nwant %s", c.flags, strings.Join(got, " "), c.want)
		}
	}
}

// submit --wait removes the job's submission files (its secret) when Slurm says the job
// ended, and keeps them when Slurm cannot say (it forgot the job and has no accounting):
// the one rule collect follows too (jobdir.Layout.RemoveSubmittedWhenEnded).
func TestSubmitWaitRemovesTheSecretOnlyWhenSlurmSaysEnded(t *testing.T) {
	for _, c := range []struct {
		name, squeue string
		kept         bool
	}{
		{name: "squeue says completed", squeue: "COMPLETED"},
		{name: "forgotten, no accounting", squeue: "", kept: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "bin")
			os.Mkdir(bin, 0o755)
			for name, body := range map[string]string{"sbatch": "#!/bin/sh\necho 4242\n", "squeue": "#!/bin/sh\necho '" + c.squeue + "'\n"} {
				if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", bin) // no scontrol, no sacct
			mf := filepath.Join(dir, "m.yaml")
			os.WriteFile(mf, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
			shared := filepath.Join(dir, "shared")
			code, out, errs := run(t, "submit", "-m", mf, "--shared-dir", shared, "--wait")
			if code != exitRun || !strings.HasPrefix(out, "4242\n") { // no node reported
				t.Fatalf("exit %d, stdout %q\n%s", code, out, errs)
			}
			secrets, _ := filepath.Glob(jobdir.Layout{Shared: shared}.SubmitFiles("*").Secret)
			records, _ := filepath.Glob(filepath.Join(jobdir.Layout{Shared: shared}.Submit(), "4242.job"))
			if kept := len(secrets) == 1 && len(records) == 1; kept != c.kept || len(secrets) > 1 {
				t.Fatalf("secrets %v, records %v; want kept %v", secrets, records, c.kept)
			}
		})
	}
}

// --scheduler kubernetes takes the cluster's flags and refuses Slurm's (and Slurm the
// cluster's), exit 4 before anything is read; an unknown scheduler is refused; the dry run
// prints the objects and needs no cluster.
func TestSubmitSchedulerFlags(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: x\nimage: {ref: registry.example/x:1}\ngpu: {vendor: none}\nkubernetes: {resultsClaim: r}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scheduler", "kubernetes", "--partition", "gpu"}, "--partition is an option of Slurm's, not of --scheduler kubernetes"},
		{[]string{"--scheduler", "kubernetes", "--sbatch-arg=--exclusive"}, "--sbatch-arg is an option of Slurm's"},
		{[]string{"--namespace", "bench"}, "--namespace is an option of --scheduler kubernetes"},
		{[]string{"--scheduler", "pbs"}, `--scheduler "pbs" is not a scheduler benchctl submits to`},
		{[]string{"--scheduler", "kubernetes", "--namespace", "Bench_NS", "--dry-run"}, `"Bench_NS" is not a namespace name`},
	} {
		code, _, errs := run(t, append([]string{"submit", "-m", mf, "--shared-dir", dir}, c.args...)...)
		if code != 4 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, errs)
		}
	}
	code, out, errs := run(t, "submit", "-m", mf, "--shared-dir", dir, "--scheduler", "kubernetes", "--nodes", "2", "--namespace", "bench", "--dry-run")
	if code != 0 || !strings.Contains(out, "kind: Job") || !strings.Contains(out, "namespace: bench") || !strings.Contains(out, "completions: 2") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
}
