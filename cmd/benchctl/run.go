package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

func newRunCmd(io iostreams.Streams, run runF[*commands.RunOptions]) *cobra.Command {
	run = run.or(commands.Run)
	opts := &commands.RunOptions{}
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
			if err := opts.Src.Check(cmd.Name()); err != nil {
				return err
			}
			if opts.BarrierTimeout <= 0 {
				return usagef("give a positive duration, e.g. --barrier-timeout 30m", "--barrier-timeout %v is not a positive duration", opts.BarrierTimeout)
			}
			if f := cmd.Flags().Lookup("heartbeat"); f.Changed && (opts.Heartbeat < manifest.MinHeartbeat || opts.Heartbeat > manifest.MaxHeartbeat) {
				return usagef("give a period from 100ms to 10m, e.g. --heartbeat 5s", "--heartbeat %v is out of range", opts.Heartbeat)
			}
			opts.Tools.Set = cmd.Flags().Lookup("tools").Changed
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	addSourceFlags(&opts.Src, cmd, f)
	addToolFlags(&opts.Tools, cmd)
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory, the same on every node (default $BENCHCTL_SHARED_DIR)")
	f.StringVar(&opts.Record, "record", "", "run the image pinned by this build record (from benchctl build --record)")
	f.StringSliceVar(&opts.Benchmarks, "benchmarks", nil, "run only these benchmarks (comma-separated)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "show the node context, the image and each container as a docker run line; change nothing")
	outputFlag(cmd, &opts.Output, "table", "json")
	f.DurationVar(&opts.BarrierTimeout, "barrier-timeout", time.Hour, "how long nodes wait for each other (rank 0 may be building)")
	f.DurationVar(&opts.Heartbeat, "heartbeat", 0, "how often nodes tell each other they are alive; one silent for 3 periods is lost (default: the manifest's job.heartbeat, else 5s)")
	engineFlag(cmd, &opts.Engine)
	runtimeFlag(cmd, &opts.Runtime)
	f.StringVar(&opts.SysfsRoot, "sysfs-root", "", "read the GPU inventory's /sys, /proc and /opt/rocm under this directory (a recorded tree; tests)")
	_ = f.MarkHidden("sysfs-root")
	f.BoolVar(&opts.NoSkipArch, "disable-skip-gpu-arch", false, "run MAD models on every GPU architecture, whatever their skip_gpu_arch says (as madengine's flag)")
	_ = cmd.RegisterFlagCompletionFunc("benchmarks", completeBenchmarks)
	_ = cmd.MarkFlagFilename("record", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	_ = cmd.MarkFlagDirname("sysfs-root")
	return cmd
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
