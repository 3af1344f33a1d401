package main

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// captured is a runF that keeps the options it was handed and runs nothing.
func captured[O any](got *O, calls *int) runF[O] {
	return func(_ context.Context, _ iostreams.Streams, opts O) error {
		*got = opts
		*calls++
		return nil
	}
}

// execute runs a command built with a capturing runF on args, as the root runs it.
func execute(t *testing.T, cmd *cobra.Command, args ...string) error {
	t.Helper()
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(flagError)
	return cmd.ExecuteContext(context.Background())
}

// Every command line becomes the options its work is handed, checked without running it:
// flags, positional arguments, defaults and what RunE derives (cli/cli's runF seam).
func TestCommandLinesBecomeOptions(t *testing.T) {
	t.Setenv("BENCHCTL_SHARED_DIR", "")
	t.Setenv("SLURM_JOB_ID", "")
	io := iostreams.New(nil, &bytes.Buffer{}, &bytes.Buffer{})
	t.Run("build", func(t *testing.T) {
		var got *commands.BuildOptions
		n := 0
		err := execute(t, newBuildCmd(io, captured(&got, &n)), "-m", "m.yaml", "--no-cache", "--target-archs", "gfx942,gfx90a", "--shared-dir", "/s")
		if err != nil || n != 1 || got.Src.Manifest != "m.yaml" || !got.NoCache || !reflect.DeepEqual(got.TargetArchs, []string{"gfx942", "gfx90a"}) || got.SharedDir != "/s" {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
	})
	t.Run("run", func(t *testing.T) {
		var got *commands.RunOptions
		n := 0
		err := execute(t, newRunCmd(io, captured(&got, &n)), "--tags", "pyt_a,pyt_b", "--benchmarks", "x", "--dry-run", "--barrier-timeout", "90s", "--runtime", "process")
		if err != nil || n != 1 || !reflect.DeepEqual(got.Src.Tags, []string{"pyt_a", "pyt_b"}) || got.Src.Manifest != "" || got.Runtime != "process" ||
			!reflect.DeepEqual(got.Benchmarks, []string{"x"}) || !got.DryRun || got.BarrierTimeout != 90*time.Second {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
	})
	t.Run("submit", func(t *testing.T) {
		var got *commands.SubmitOptions
		n := 0
		err := execute(t, newSubmitCmd(io, captured(&got, &n)), "-m", "m.yaml", "-N", "4", "-p", "gpu", "--sbatch-arg=--gres=gpu:8", "--wait", "--collect")
		if err != nil || n != 1 || got.Nodes != 4 || got.Partition != "gpu" || !reflect.DeepEqual(got.SbatchArgs, []string{"--gres=gpu:8"}) || !got.Wait || !got.Collect {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
		// the Slurm flags given override the manifest's slurm: block; those not given leave it
		sub, ok := got.Submitter.(slurm.Submitter)
		if !ok || sub.Overrides.Nodes == nil || *sub.Overrides.Nodes != 4 || *sub.Overrides.Partition != "gpu" || sub.Overrides.Account != nil {
			t.Fatalf("submitter %#v", got.Submitter)
		}
	})
	t.Run("collect", func(t *testing.T) {
		var got *commands.CollectOptions
		n := 0
		err := execute(t, newCollectCmd(io, captured(&got, &n)), "1234", "--partial", "--attempt", "2", "--threshold", "7%", "--shared-dir", "/s")
		if err != nil || n != 1 || got.Job != "1234" || !got.Partial || got.Attempt != 2 || got.ThresholdPct != 7 || got.SharedDir != "/s" {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
		// the newest attempt unless --attempt says which
		if err := execute(t, newCollectCmd(io, captured(&got, &n)), "99"); err != nil || got.Attempt != -1 || got.Job != "99" {
			t.Fatalf("err %v, %+v", err, got)
		}
	})
	t.Run("compare", func(t *testing.T) {
		var got *commands.CompareOptions
		n := 0
		err := execute(t, newCompareCmd(io, captured(&got, &n)), "a.csv", "b.csv", "--threshold", "3%", "--alpha", "0.01")
		if err != nil || n != 1 || got.BasePath != "a.csv" || got.NewPath != "b.csv" || got.Compare.Threshold != 3 || got.Compare.Alpha != 0.01 {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
		err = execute(t, newCompareCmd(io, captured(&got, &n)), "77", "--against", "last")
		if err != nil || got.BasePath != "" || got.NewPath != "77" || got.Against != "last" || !got.AgainstGiven {
			t.Fatalf("one job: err %v, %+v", err, got)
		}
	})
	t.Run("history", func(t *testing.T) {
		var got *commands.HistoryOptions
		n := 0
		err := execute(t, newHistoryCmd(io, captured(&got, &n)), "55", "--metric", "tflops", "-n", "3")
		if err != nil || n != 1 || got.Job != "55" || got.Opts.Metric != "tflops" || got.Opts.Last != 3 {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
	})
	t.Run("jobs", func(t *testing.T) {
		var got *commands.JobsOptions
		n := 0
		if err := execute(t, newJobsCmd(io, captured(&got, &n)), "--no-slurm", "--limit", "5"); err != nil || n != 1 || !got.NoSlurm || got.Limit != 5 {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
	})
	t.Run("cleanup", func(t *testing.T) {
		var got *commands.CleanupOptions
		n := 0
		// in a Slurm epilog, the job and the node are the epilog's unless given
		t.Setenv("SLURM_JOB_ID", "4242")
		t.Setenv("SLURMD_NODENAME", "gpu-07")
		if err := execute(t, newCleanupCmd(io, captured(&got, &n)), "--host", "n1"); err != nil || n != 1 || got.Job != "" || got.EpilogJob != "4242" || got.Host != "n1" || got.EpilogHost != "gpu-07" {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
		t.Setenv("SLURM_JOB_ID", "")
		if err := execute(t, newCleanupCmd(io, captured(&got, &n))); exitcode.Of(err) != exitcode.Invalid || n != 1 {
			t.Fatalf("no job and no epilog: %v, %d calls", err, n)
		}
	})
	t.Run("doctor, validate, version", func(t *testing.T) {
		var d *commands.DoctorOptions
		var v *commands.ValidateOptions
		var ver *commands.VersionOptions
		n := 0
		if err := execute(t, newDoctorCmd(io, captured(&d, &n)), "-m", "m.yaml", "-o", "json"); err != nil || d.Manifest != "m.yaml" || d.Output != "json" {
			t.Fatalf("doctor: err %v, %+v", err, d)
		}
		if err := execute(t, newValidateCmd(io, captured(&v, &n)), "-m", "m.yaml", "-o", "json"); err != nil || v.Manifest != "m.yaml" || v.Output != "json" {
			t.Fatalf("validate: err %v, %+v", err, v)
		}
		if err := execute(t, newVersionCmd(io, captured(&ver, &n)), "--no-engine"); err != nil || !ver.NoEngine || ver.Output != "table" {
			t.Fatalf("version: err %v, %+v", err, ver)
		}
		if n != 3 {
			t.Fatalf("%d calls", n)
		}
	})
	t.Run("cache", func(t *testing.T) {
		var got *commands.CacheOptions
		n := 0
		runs := cacheRuns{ls: captured(&got, &n), verify: captured(&got, &n), prune: captured(&got, &n), load: captured(&got, &n)}
		if err := execute(t, newCacheCmd(io, runs), "verify", "a1d05fcf", "--shared-dir", "/s"); err != nil || !reflect.DeepEqual(got.Keys, []string{"a1d05fcf"}) || got.SharedDir != "/s" {
			t.Fatalf("verify: err %v, %+v", err, got)
		}
		if err := execute(t, newCacheCmd(io, runs), "load", "a1d0"); err != nil || got.Key != "a1d0" {
			t.Fatalf("load: err %v, %+v", err, got)
		}
		if err := execute(t, newCacheCmd(io, runs), "prune", "--keep", "5", "--dry-run"); err != nil || got.Prune.Keep != 5 || !got.Prune.DryRun || !got.Prune.Limit {
			t.Fatalf("prune: err %v, %+v", err, got)
		}
		if err := execute(t, newCacheCmd(io, runs), "ls", "-o", "json"); err != nil || got.Output != "json" || n != 4 {
			t.Fatalf("ls: err %v, %d calls, %+v", err, n, got)
		}
	})
	t.Run("reference", func(t *testing.T) {
		var set, show, clear *commands.ReferenceOptions
		n := 0
		runs := referenceRuns{set: captured(&set, &n), show: captured(&show, &n), clear: captured(&clear, &n)}
		for _, args := range [][]string{{"set", "12"}, {"show", "allreduce"}, {"clear", "allreduce"}} {
			if err := execute(t, newReferenceCmd(io, runs), args...); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
		if set.Target != "12" || show.Target != "allreduce" || clear.Target != "allreduce" || n != 3 {
			t.Fatalf("%+v %+v %+v", set, show, clear)
		}
	})
	t.Run("init", func(t *testing.T) {
		var starter, example *commands.InitOptions
		n := 0
		runs := initRuns{starter: captured(&starter, &n), example: captured(&example, &n)}
		if err := execute(t, newInitCmd(io, runs), "--image", "rocm/pytorch:6.4", "--name", "smoke"); err != nil || starter.Image != "rocm/pytorch:6.4" || starter.Name != "smoke" {
			t.Fatalf("starter: err %v, %+v", err, starter)
		}
		if err := execute(t, newInitCmd(io, runs), "--example", "allreduce", "--dir", "d"); err != nil || example.Example != "allreduce" || example.Dir != "d" || n != 2 {
			t.Fatalf("example: err %v, %+v", err, example)
		}
	})
	t.Run("models list", func(t *testing.T) {
		var got *commands.ModelsListOptions
		n := 0
		if err := execute(t, newModelsCmd(io, captured(&got, &n)), "list", "--catalog", "c.json", "--tags", "pyt"); err != nil || got.Catalog != "c.json" || !reflect.DeepEqual(got.Tags, []string{"pyt"}) || n != 1 {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
	})
	t.Run("gpus", func(t *testing.T) {
		var got *commands.GPUsOptions
		n := 0
		if err := execute(t, newGpusCmd(io, captured(&got, &n)), "--vendor", "amd", "--watch", "2s"); err != nil || got.Vendor != "amd" || !got.Watch || got.Interval != 2*time.Second || got.Deps.Detect == nil || n != 1 {
			t.Fatalf("err %v, %d calls, %+v", err, n, got)
		}
	})
}

// A command line its command refuses never reaches the work: exit 4, nothing run.
func TestBadCommandLinesRunNothing(t *testing.T) {
	io := iostreams.New(nil, &bytes.Buffer{}, &bytes.Buffer{})
	n := 0
	var c *commands.CollectOptions
	var s *commands.SubmitOptions
	var r *commands.RunOptions
	for name, cmd := range map[string]func() *cobra.Command{
		"collect --threshold x":   func() *cobra.Command { return newCollectCmd(io, captured(&c, &n)) },
		"run with no manifest":    func() *cobra.Command { return newRunCmd(io, captured(&r, &n)) },
		"submit -m and --tags":    func() *cobra.Command { return newSubmitCmd(io, captured(&s, &n)) },
		"run --barrier-timeout 0": func() *cobra.Command { return newRunCmd(io, captured(&r, &n)) },
		"run --runtime vm":        func() *cobra.Command { return newRunCmd(io, captured(&r, &n)) },
	} {
		args := map[string][]string{
			"collect --threshold x":   {"1", "--threshold", "x"},
			"run with no manifest":    {},
			"submit -m and --tags":    {"-m", "m.yaml", "--tags", "pyt"},
			"run --barrier-timeout 0": {"-m", "m.yaml", "--barrier-timeout", "0s"},
			"run --runtime vm":        {"-m", "m.yaml", "--runtime", "vm"},
		}[name]
		err := execute(t, cmd(), args...)
		var usage *exitcode.UsageError
		if exitcode.Of(err) != exitcode.Invalid || !errors.As(err, &usage) || strings.TrimSpace(usage.Hint()) == "" {
			t.Errorf("%s: exit %d (%v), want 4 with a hint", name, exitcode.Of(err), err)
		}
	}
	if n != 0 {
		t.Fatalf("a refused command line ran its work %d times", n)
	}
}
