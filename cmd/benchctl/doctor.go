package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

func newDoctorCmd(io iostreams.Streams, run runF[*commands.DoctorOptions]) *cobra.Command {
	run = run.or(commands.Doctor)
	opts := &commands.DoctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor [--manifest FILE]",
		Short: "Check that this node (or every node, under srun) can run benchmarks",
		Long: `Check the things a run needs, one line each with a fix when it fails: the container engine
(Docker or Podman, --engine or the manifest's engine:), its version and API version, and for
a rootless engine what rootless cannot give (subordinate id ranges, the locked-memory limit,
cgroup delegation); the node's record (kernel, OS, CPU, memory, NUMA, RDMA devices, GPUs with
driver and firmware, engine, Slurm: what benchctl run writes as node.json; the whole record
with -o json); the shared directory is writable and, under srun, the same folder on every
node; under srun, every node has the same GPU driver and runtime, GPU firmware and RDMA
firmware (rank 0 compares the records the nodes leave in the shared directory); the clock
agrees with the shared filesystem's; the Slurm environment has one task per node; with
--manifest, the GPUs match the manifest's vendor and count, the GPU management library (AMD
SMI or NVML) answers, with its version or why it does not, the selected GPUs run no other
processes (needs the library), which way the GPUs reach a container on this engine and why
(NVIDIA: CDI devices or the NVIDIA device request; AMD: device files, keep-groups on rootless
Podman; a CDI spec that was skipped is a line of its own), and there is disk space for its
image. Exit 1 if any check
fails. -o json prints {"host", "ok", "checks"}: indented, or one line per node when several
tasks of an srun step print.`,
		Example: `  benchctl doctor
  benchctl doctor --manifest models/allreduce/benchmark.yaml
  srun -N 4 --ntasks-per-node=1 benchctl doctor --shared-dir /shared/benchctl
  benchctl doctor -o json`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Manifest, "manifest", "m", "", "also check GPUs and disk space against this manifest")
	cmd.Flags().StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	outputFlag(cmd, &opts.Output, "table", "json")
	engineFlag(cmd, &opts.Engine)
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}
