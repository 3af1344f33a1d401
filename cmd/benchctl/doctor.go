package main

import (
	"context"
	"fmt"
	"github.com/benchctl/benchctl/internal/jsonout"
	"os"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/doctor"
)

type doctorOptions struct {
	manifest  string
	sharedDir string
	output    string
	engine    string
}

// doctorReport is doctor -o json: this node's checks, named by its host.
type doctorReport struct {
	Host   string         `json:"host"`
	OK     bool           `json:"ok"` // every check passed
	Checks []doctor.Check `json:"checks"`
}

// doctorFailed makes doctor exit 1 when a check failed.
type doctorFailed struct{ n int }

func (e *doctorFailed) Error() string { return fmt.Sprintf("%d checks failed", e.n) }
func (e *doctorFailed) ExitCode() int { return 1 }

func newDoctorCmd(io streams) *cobra.Command {
	opts := &doctorOptions{}
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
			return doctorRun(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.manifest, "manifest", "m", "", "also check GPUs and disk space against this manifest")
	cmd.Flags().StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	outputFlag(cmd, &opts.output, "table", "json")
	engineFlag(cmd, &opts.engine)
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

func doctorRun(ctx context.Context, io streams, opts *doctorOptions) error {
	var m *manifest.Manifest
	if opts.manifest != "" {
		var err error
		if m, err = loadManifest(opts.manifest); err != nil {
			return err
		}
	}
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	kind := engineKind(opts.engine, m)
	node, nerr := detectNode(os.LookupEnv)
	checks := doctor.Run(ctx, doctor.Options{Node: node, NodeErr: nerr, SharedDir: dir, Manifest: m, Lookup: os.LookupEnv, EngineKind: kind,
		Engine: func() (doctor.Engine, error) { return connectDoctorEngine(kind) }, Version: currentBuild().Version})
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	host, _ := os.Hostname()
	if opts.output == "json" {
		// One document per node, naming it; under srun with several tasks, one line each
		// (their stdout reaches the user interleaved line by line).
		doc := doctorReport{Host: host, OK: failed == 0, Checks: checks}
		if severalNodesPrint(os.LookupEnv) {
			if err := jsonout.Line(io.out, doc); err != nil {
				return err
			}
		} else if err := writeJSON(io.out, doc); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			// Detail can quote what other nodes wrote into the shared .doctor folder.
			fmt.Fprintf(io.out, "%s  %s  %s: %s\n", host, mark, c.Name, textsafe.Line(c.Detail))
			if c.Fix != "" {
				fmt.Fprintf(io.out, "%s        fix: %s\n", host, textsafe.Line(c.Fix))
			}
		}
	}
	if failed > 0 {
		return &doctorFailed{n: failed}
	}
	return nil
}

// connectDoctorEngine is the engine client as doctor's engine (nil, not a nil client, on error).
func connectDoctorEngine(kind string) (doctor.Engine, error) {
	c, err := image.ConnectKind(kind)
	if err != nil {
		return nil, err
	}
	return c, nil
}
