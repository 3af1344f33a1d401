package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
	"github.com/benchctl/benchctl/runner"
)

type runOptions struct {
	sysfsRoot      string
	src            manifestSource
	sharedDir      string
	record         string
	benchmarks     []string
	dryRun         bool
	output         string
	barrierTimeout time.Duration
	heartbeat      time.Duration
	noSkipArch     bool
	tools          toolFlags
	engine         string
}

func newRunCmd(io iostreams.Streams) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run (--manifest FILE | --tags TAGS [--context JSON])",
		Short: "Run the manifest's benchmarks on this node (one task per node under srun)",
		Long: `Run the benchmarks of a manifest as one node of a job. Under Slurm, start it once per node
(srun --ntasks-per-node=1 benchctl run ...) with the same command line everywhere; rank 0
makes sure each image is cached (building it if needed), the others wait at an authenticated
barrier, load each image only if their engine lacks it, and all start together. Outside Slurm
it is a one-node job; for several, set NODE_RANK, NNODES, MASTER_ADDR and BENCHCTL_JOB_ID
on every node (MASTER_ADDR alone is an error, not a one-node job).

Every node leaves jobs/<job>[.<attempt>]/nodes/<rank>-<host>/ in the shared directory:
status.json, <benchmark>.log, results/<benchmark>/ (mounted as $BENCHCTL_OUTPUT_DIR) and, on
failure, diagnostics/<benchmark>/. On stdout, run prints one line per benchmark (node,
benchmark, outcome, seconds), or with -o json the node's status.json; --dry-run prints the
plan, as text or with -o json as JSON. On a node without the manifest's GPUs (a login node)
the dry run warns once and plans with the GPUs gpu.count (or a MAD model's n_gpus) asks
for; the run there exits 4.

In a MAD checkout, as madengine runs it, --tags without --manifest runs the models of
./models.json with those tags, each on the image of its own Dockerfile picked by gpu_vendor;
--context (or --context-file) takes madengine's --additional-context keys (gpu_vendor,
guest_os, docker_env_vars, docker_mounts, docker_build_arg, docker_gpus). The checkout is
mounted at /myworkspace, where the models start.

While the benchmarks run the nodes supervise each other: a benchmark that fails on any node
aborts the job on every node (benchmarks[].onFailure: abort, the default with more than one
node), a node silent for three heartbeats is lost and the job aborted, and a node that loses
rank 0 stops its container and exits 1. Exit codes: 0 all benchmarks succeeded, 1 another failure
(e.g. no engine), 2 the image build failed, 3 a benchmark failed (or the run was cancelled),
4 invalid input.`,
		Example: `  benchctl run --manifest models/cpubench/benchmark.yaml
  srun --ntasks-per-node=1 benchctl run -m models/allreduce/benchmark.yaml --shared-dir /shared/benchctl
  benchctl run -m m.yaml --record build.json --benchmarks train,infer
  benchctl run -m m.yaml --dry-run
  benchctl run --tags vllm --context '{"gpu_vendor": "AMD", "docker_env_vars": {"HF_HOME": "/data/hf"}}'`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.src.check(cmd.Name()); err != nil {
				return err
			}
			if opts.barrierTimeout <= 0 {
				return usagef("give a positive duration, e.g. --barrier-timeout 30m", "--barrier-timeout %v is not a positive duration", opts.barrierTimeout)
			}
			if f := cmd.Flags().Lookup("heartbeat"); f.Changed && (opts.heartbeat < manifest.MinHeartbeat || opts.heartbeat > manifest.MaxHeartbeat) {
				return usagef("give a period from 100ms to 10m, e.g. --heartbeat 5s", "--heartbeat %v is out of range", opts.heartbeat)
			}
			opts.tools.set = cmd.Flags().Lookup("tools").Changed
			return runRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	opts.src.addFlags(cmd, f)
	opts.tools.addFlags(cmd)
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory, the same on every node (default $BENCHCTL_SHARED_DIR)")
	f.StringVar(&opts.record, "record", "", "run the image pinned by this build record (from benchctl build --record)")
	f.StringSliceVar(&opts.benchmarks, "benchmarks", nil, "run only these benchmarks (comma-separated)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "show the node context, the image and each container as a docker run line; change nothing")
	outputFlag(cmd, &opts.output, "table", "json")
	f.DurationVar(&opts.barrierTimeout, "barrier-timeout", time.Hour, "how long nodes wait for each other (rank 0 may be building)")
	f.DurationVar(&opts.heartbeat, "heartbeat", 0, "how often nodes tell each other they are alive; one silent for 3 periods is lost (default: the manifest's job.heartbeat, else 5s)")
	engineFlag(cmd, &opts.engine)
	f.StringVar(&opts.sysfsRoot, "sysfs-root", "", "read the GPU inventory's /sys, /proc and /opt/rocm under this directory (a recorded tree; tests)")
	_ = f.MarkHidden("sysfs-root")
	f.BoolVar(&opts.noSkipArch, "disable-skip-gpu-arch", false, "run MAD models on every GPU architecture, whatever their skip_gpu_arch says (as madengine's flag)")
	_ = cmd.RegisterFlagCompletionFunc("benchmarks", completeBenchmarks)
	_ = cmd.MarkFlagFilename("record", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	_ = cmd.MarkFlagDirname("sysfs-root")
	return cmd
}

func runRun(ctx context.Context, io iostreams.Streams, opts *runOptions) error {
	m, err := opts.src.load()
	if err != nil {
		return err
	}
	if err := opts.tools.apply(ctx, m); err != nil {
		return err
	}
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	node, err := detectNode(os.LookupEnv)
	if err != nil {
		return err
	}
	ro := runner.Options{Node: node, Manifest: m, SharedDir: dir, Benchmarks: opts.benchmarks, Lookup: os.LookupEnv,
		Environ: os.Environ(), Version: currentBuild().Version, BarrierTimeout: opts.barrierTimeout, Heartbeat: opts.heartbeat, NoSkipGPUArch: opts.noSkipArch, SysfsRoot: opts.sysfsRoot,
		EngineKind: engineKind(opts.engine, m), Stream: io.ErrOut(), Catalog: models.JobCatalog{}}
	ro.Engine = func() (runner.Engine, error) { return image.ConnectKind(ro.EngineKind) }
	if opts.record != "" {
		if ro.Records, err = image.ReadRecords(opts.record); err != nil {
			return usagef("pass the file written by benchctl build --record", "%v", err)
		}
	}
	if opts.dryRun {
		plan, err := runner.Plan(ctx, ro)
		if err != nil {
			return err
		}
		for _, w := range plan.Warnings {
			slog.Warn(w)
		}
		return printPlan(io, plan, opts.output)
	}
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	ro.Progress = pp.Func()
	res, err := runner.Run(ctx, ro)
	if res != nil {
		slog.Info("node finished", "outcome", res.Status.Outcome, "status", res.NodeDir+"/status.json")
		if opts.output == "json" {
			if jerr := writeJSON(io.Out(), res.Status); jerr != nil && err == nil {
				err = jerr
			}
			return err
		}
		for _, b := range res.Status.Benchmarks {
			fmt.Fprintf(io.Out(), "%s\t%s\t%s\t%.1fs\n", res.Node.NodeName(), b.Name, b.Outcome, b.DurationSeconds)
		}
	}
	return err
}

func printPlan(io iostreams.Streams, p *runner.PlanResult, format string) error {
	if format == "json" {
		return writeJSON(io.Out(), p)
	}
	n := p.Node
	fmt.Fprintf(io.Out(), "node:    rank %d of %d on %s (%s), job %s attempt %d\nmaster:  %s:%d\njob dir: %s\n",
		n.Rank, n.World, n.Host, n.Source, n.JobID, n.Attempt, n.MasterAddr, n.MasterPort, p.JobDir)
	for _, img := range p.Images {
		fmt.Fprintf(io.Out(), "image:   %s\n", img.Ref)
		if img.Dockerfile != "" && len(p.Images) > 1 {
			fmt.Fprintf(io.Out(), "  from:  %s\n", img.Dockerfile)
		}
		if img.Key != "" {
			fmt.Fprintf(io.Out(), "  key:   %s\n", img.Key)
		}
		fmt.Fprintf(io.Out(), "  state: %s\n", img.State)
		if img.Distribution != "" {
			fmt.Fprintf(io.Out(), "  nodes: %s\n", img.Distribution)
		}
		fmt.Fprintf(io.Out(), "  runs:  %s\n", strings.Join(img.Benchmarks, ", "))
	}
	for _, g := range p.GPUs {
		fmt.Fprintf(io.Out(), "gpus:    %s\n", g)
	}
	for _, sk := range p.Skipped {
		fmt.Fprintf(io.Out(), "skipped: %s\n", sk)
	}
	for _, t := range p.Tools {
		fmt.Fprintf(io.Out(), "tool:    %s\n", t)
	}
	for _, w := range p.Workspaces {
		fmt.Fprintf(io.Out(), "workspace: %s\n", w)
	}
	for _, c := range p.Containers {
		fmt.Fprintf(io.Out(), "\n%s\n", c)
	}
	if x := p.Experiment; x != nil {
		printExperimentPlan(io, n, x)
	}
	return nil
}

// printExperimentPlan is the dry run's experiment: the variants (this node's containers in
// those it runs) and the order of the trials.
func printExperimentPlan(io iostreams.Streams, n runner.Node, x *runner.PlanExperiment) {
	seed := ""
	if x.Seed != nil {
		seed = fmt.Sprintf(", seed %d", *x.Seed)
	}
	fmt.Fprintf(io.Out(), "experiment: %d variants × (%d warmup + %d measured) trials, order %s%s\n", len(x.Variants), x.Warmup, x.Repeat, x.Order, seed)
	for i, v := range x.Variants {
		id := v.ID
		if id == "" {
			id = "(no parameters)"
		}
		fmt.Fprintf(io.Out(), "\nvariant %d: %s on %d node(s)\n", i+1, id, v.Nodes)
		if len(v.Containers) == 0 {
			fmt.Fprintf(io.Out(), "  rank %d waits (it runs no container in this variant)\n", n.Rank)
		}
		for _, c := range v.Containers {
			fmt.Fprintf(io.Out(), "%s\n", c)
		}
	}
	fmt.Fprintf(io.Out(), "\ntrials (in order):\n")
	for _, t := range x.Trials {
		w := ""
		if t.Warmup {
			w = " (warmup)"
		}
		fmt.Fprintf(io.Out(), "  %d. variant %d trial %d%s\n", t.Seq, t.Variant+1, t.N, w)
	}
}

// completeBenchmarks completes --benchmarks from the manifest given with --manifest.
func completeBenchmarks(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	mf, _ := cmd.Flags().GetString("manifest")
	if mf == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	m, _, err := models.LoadManifest(mf, os.LookupEnv)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, b := range m.Benchmarks {
		names = append(names, b.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
