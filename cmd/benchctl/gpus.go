package main

import (
	"os"
	"time"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/gpu"
)

func newGpusCmd(io iostreams.Streams, run runF[*commands.GPUsOptions]) *cobra.Command {
	return newGpusCmdDeps(io, commands.GPUsDeps{Detect: gpu.Detect, Snapshot: gpu.Snapshot, Open: gpu.OpenSampler, Now: time.Now, Hostname: os.Hostname, Lookup: os.LookupEnv}, run)
}

// newGpusCmdWith is gpus with detect in place of gpu.Detect (and no snapshot): tests.
func newGpusCmdWith(io iostreams.Streams, detect commands.DetectGPUs) *cobra.Command {
	return newGpusCmdDeps(io, commands.GPUsDeps{Detect: detect, Open: gpu.OpenSampler, Now: time.Now, Hostname: os.Hostname, Lookup: os.LookupEnv}, nil)
}

func newGpusCmdDeps(io iostreams.Streams, deps commands.GPUsDeps, run runF[*commands.GPUsOptions]) *cobra.Command {
	run = run.or(commands.GPUs)
	opts := &commands.GPUsOptions{Deps: deps}
	var watch string
	cmd := &cobra.Command{
		Use:   "gpus [--vendor auto|amd|nvidia] [--source auto|amdsmi|sysfs|amd-smi] [-o table|json] [--watch [INTERVAL]]",
		Short: "List this node's GPUs: index, name, arch, memory, PCI address, render node or UUID",
		Long: `List the GPUs of this node as benchctl sees them: NVIDIA GPUs through NVML (nvidia-smi in a
CGO_ENABLED=0 build); AMD GPUs through the AMD SMI library (libamd_smi.so from ROCm, loaded
at run time), else the KFD topology in /sys/class/kfd, else the amd-smi CLI. --source forces
one of them; the inventory says which answered, and why the others did not. The index is
the one CUDA_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES count; on MI250X each GCD is its own GPU.
With the AMD SMI library the table adds memory in use, partition modes, temperature and the
number of processes on each GPU; with NVML, memory in use, temperature, power (drawn/cap)
and the number of processes.

--vendor auto (the default) takes the vendor found, AMD first; a node with neither prints
"no GPUs found" on stderr and exits 0. Asking for a vendor the node does not have exits 4,
and so does a --source that cannot answer (the AMD SMI library not there: it says why).
-o json prints the whole inventory (the host, driver, CUDA/ROCm version, device files, NUMA
node, and what the management library says under smi); --json, its old spelling, still
works with a warning until the next release. When several nodes print at once (srun -N 4:
SLURM_STEP_NUM_TASKS above 1, or SLURM_NTASKS inside a step), -o json prints one compact JSON line per
node (JSON lines), --watch's JSON lines each start with "host", and the table's first line
starts with the host.

--watch [INTERVAL] samples the GPUs every INTERVAL (default 1s, at least 100ms) until
Ctrl-C, like nvidia-smi dmon and amd-smi monitor: power, energy since the start (the
device's counter, or "~" and power integrated over time where there is none or where it
jumped; the rule a run's telemetry integrates with), graphics/SM
and memory clocks, temperature, utilisation, memory in use and the clock-limiting reasons
(power, thermal, reliability, other). On a terminal it redraws a table; piped, or with
-o json, it prints one JSON line per sample: {"time": RFC 3339, "gpus": [...]}, each GPU's
facts in watts, joules, MHz, °C, percent and bytes, a fact the source cannot give left
out. Telemetry comes from NVML (NVIDIA, cgo builds), the AMD SMI library or sysfs hwmon
(AMD); what cannot be read is said once on stderr.`,
		Example: `  benchctl gpus
  benchctl gpus --vendor amd -o json
  benchctl gpus --source sysfs      # without the AMD SMI library
  srun -N 4 benchctl gpus -o json   # one JSON line per node, each naming its host
  benchctl gpus --watch             # a live table, every second
  benchctl gpus --watch 200ms -o json > telemetry.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Json {
				opts.Output = "json"
			}
			opts.Watch = cmd.Flags().Changed("watch")
			if len(args) > 0 {
				// --watch takes its interval as the next word too (--watch 200ms): a flag
				// whose value is optional only binds --watch=200ms by itself.
				if !opts.Watch || watch != commands.WatchDefault {
					return usagef("run 'benchctl gpus --help'", "unexpected argument %q: gpus takes none (an interval goes with --watch: --watch 200ms)", args[0])
				}
				watch = args[0]
			}
			if opts.Watch {
				d, err := commands.ParseWatch(watch)
				if err != nil {
					return err
				}
				opts.Interval = d
			}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	choiceFlag(cmd, f, &opts.Vendor, "vendor", "", gpu.VendorAuto, "GPU vendor: auto, amd or nvidia", gpu.VendorAuto, gpu.VendorAMD, gpu.VendorNVIDIA)
	outputFlag(cmd, &opts.Output, "table", "json")
	f.BoolVar(&opts.Json, "json", false, "old spelling of -o json")
	deprecate(cmd, "json", func(string) string { return "-o json" })
	f.StringVar(&opts.SysfsRoot, "sysfs-root", "/", "read /sys, /proc and /opt/rocm under this directory (tests)")
	sources := []string{gpu.SourceAuto, gpu.SourceAMDSMI, gpu.SourceSysfs, gpu.SourceAMDSMICLI}
	choiceFlag(cmd, f, &opts.Source, "source", "", gpu.SourceAuto,
		"where AMD GPU facts come from: auto (the AMD SMI library, else sysfs, else the amd-smi CLI), amdsmi, sysfs or amd-smi", sources...)
	choiceFlag(cmd, f, &opts.Source, "amd-source", "", gpu.SourceAuto, "old spelling of --source", gpu.SourceSysfs, gpu.SourceAMDSMICLI)
	deprecate(cmd, "amd-source", func(v string) string { return "--source " + v })
	f.StringVar(&watch, "watch", "", "sample the GPUs every `INTERVAL` (default 1s, at least 100ms) until Ctrl-C")
	f.Lookup("watch").NoOptDefVal = commands.WatchDefault
	_ = f.MarkHidden("sysfs-root")
	_ = cmd.MarkFlagDirname("sysfs-root")
	return cmd
}
