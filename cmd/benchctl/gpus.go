package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/spf13/cobra"
)

type gpusOptions struct {
	vendor    string
	output    string
	json      bool          // hidden: --json, the old spelling of -o json
	sysfsRoot string        // hidden: a recorded sysfs tree instead of /
	source    string        // AMD: auto, amdsmi, sysfs or amd-smi (--amd-source is its old spelling)
	watch     bool          // --watch: sample the GPUs until Ctrl-C
	interval  time.Duration // --watch's interval
}

// detectGPUs is gpu.Detect; tests pass a fake.
type detectGPUs func(context.Context, gpu.Options) (gpu.Inventory, error)

// gpusDeps are what gpus asks of the machine; tests pass fakes.
type gpusDeps struct {
	detect detectGPUs
	open   openSampler      // --watch's telemetry
	now    func() time.Time // --watch's sample times
}

func newGpusCmd(io streams) *cobra.Command { return newGpusCmdWith(io, gpu.Detect) }

func newGpusCmdWith(io streams, detect detectGPUs) *cobra.Command {
	return newGpusCmdDeps(io, gpusDeps{detect: detect, open: gpu.OpenSampler, now: time.Now})
}

func newGpusCmdDeps(io streams, deps gpusDeps) *cobra.Command {
	opts := &gpusOptions{}
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
number of processes on each GPU.

--vendor auto (the default) takes the vendor found, AMD first; a node with neither prints
"no GPUs found" on stderr and exits 0. Asking for a vendor the node does not have exits 4.
-o json prints the whole inventory (driver, CUDA/ROCm version, device files, NUMA node);
--json, its old spelling, still works with a warning until the next release.

--watch [INTERVAL] samples the GPUs every INTERVAL (default 1s, at least 100ms) until
Ctrl-C, like nvidia-smi dmon and amd-smi monitor: power, energy since the start (the
device's counter, or "~" and power integrated over time where there is none), graphics/SM
and memory clocks, temperature, utilisation, memory in use and the clock-limiting reasons
(power, thermal, reliability, other). On a terminal it redraws a table; piped, or with
-o json, it prints one JSON line per sample: {"time": RFC 3339, "gpus": [...]}, each GPU's
facts in watts, joules, MHz, °C, percent and bytes, a fact the source cannot give left
out. Telemetry comes from NVML (NVIDIA, cgo builds), the AMD SMI library or sysfs hwmon
(AMD); what cannot be read is said once on stderr.`,
		Example: `  benchctl gpus
  benchctl gpus --vendor amd -o json
  benchctl gpus --source sysfs      # without the AMD SMI library
  srun -N 4 benchctl gpus -o json   # one inventory per node
  benchctl gpus --watch             # a live table, every second
  benchctl gpus --watch 200ms -o json > telemetry.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.json {
				opts.output = "json"
			}
			opts.watch = cmd.Flags().Changed("watch")
			if len(args) > 0 {
				// --watch takes its interval as the next word too (--watch 200ms): a flag
				// whose value is optional only binds --watch=200ms by itself.
				if !opts.watch || watch != watchDefault {
					return usagef("run 'benchctl gpus --help'", "unexpected argument %q: gpus takes none (an interval goes with --watch: --watch 200ms)", args[0])
				}
				watch = args[0]
			}
			if opts.watch {
				d, err := parseWatch(watch)
				if err != nil {
					return err
				}
				opts.interval = d
			}
			return gpusRun(cmd.Context(), io, deps, opts)
		},
	}
	f := cmd.Flags()
	choiceFlag(cmd, f, &opts.vendor, "vendor", "", gpu.VendorAuto, "GPU vendor: auto, amd or nvidia", gpu.VendorAuto, gpu.VendorAMD, gpu.VendorNVIDIA)
	outputFlag(cmd, &opts.output, "table", "json")
	f.BoolVar(&opts.json, "json", false, "old spelling of -o json")
	deprecate(cmd, "json", func(string) string { return "-o json" })
	f.StringVar(&opts.sysfsRoot, "sysfs-root", "/", "read /sys, /proc and /opt/rocm under this directory (tests)")
	sources := []string{gpu.SourceAuto, gpu.SourceAMDSMI, gpu.SourceSysfs, gpu.SourceAMDSMICLI}
	choiceFlag(cmd, f, &opts.source, "source", "", gpu.SourceAuto,
		"where AMD GPU facts come from: auto (the AMD SMI library, else sysfs, else the amd-smi CLI), amdsmi, sysfs or amd-smi", sources...)
	choiceFlag(cmd, f, &opts.source, "amd-source", "", gpu.SourceAuto, "old spelling of --source", gpu.SourceSysfs, gpu.SourceAMDSMICLI)
	deprecate(cmd, "amd-source", func(v string) string { return "--source " + v })
	f.StringVar(&watch, "watch", "", "sample the GPUs every `INTERVAL` (default 1s, at least 100ms) until Ctrl-C")
	f.Lookup("watch").NoOptDefVal = watchDefault
	_ = f.MarkHidden("sysfs-root")
	_ = cmd.MarkFlagDirname("sysfs-root")
	return cmd
}

// watchDefault is --watch's interval when it is given without one.
const watchDefault = "1s"

func gpusRun(ctx context.Context, io streams, deps gpusDeps, opts *gpusOptions) error {
	inv, err := deps.detect(ctx, gpu.Options{Vendor: opts.vendor, SysfsRoot: opts.sysfsRoot, AMDSource: opts.source})
	if err != nil {
		return err
	}
	for _, n := range inv.Notes {
		slog.Info(n)
	}
	if len(inv.GPUs) == 0 {
		fmt.Fprintln(io.err, "no GPUs found")
	}
	if opts.watch {
		if len(inv.GPUs) == 0 {
			return nil
		}
		return gpusWatch(ctx, io, inv, deps.open, deps.now, opts)
	}
	if opts.output == "json" {
		return writeJSON(io.out, inv)
	}
	if len(inv.GPUs) == 0 {
		return nil
	}
	return writeGPUTable(io.out, inv)
}

// writeGPUTable prints a one-line summary and one row per GPU.
func writeGPUTable(w io.Writer, inv gpu.Inventory) error {
	about := []string{"source " + inv.Source}
	if inv.Driver != "" {
		about = append(about, "driver "+inv.Driver)
	}
	switch {
	case inv.Runtime == "":
	case inv.Vendor == gpu.VendorAMD:
		about = append(about, "ROCm "+inv.Runtime)
	case inv.Vendor == gpu.VendorNVIDIA:
		about = append(about, "CUDA "+inv.Runtime)
	}
	n := fmt.Sprintf("%d %s GPUs", len(inv.GPUs), strings.ToUpper(inv.Vendor))
	if len(inv.GPUs) == 1 {
		n = "1 " + strings.ToUpper(inv.Vendor) + " GPU"
	}
	if inv.Library != "" {
		about = append(about[:1], append([]string{inv.Library}, about[1:]...)...)
	}
	fmt.Fprintf(w, "%s (%s)\n", n, strings.Join(about, ", "))
	smi := false
	for _, g := range inv.GPUs {
		smi = smi || g.SMI != nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "INDEX\tNAME\tARCH\tMEMORY\tPCI\tRENDER/UUID"
	if smi {
		head += "\tUSED\tPARTITION\tTEMP\tPROCESSES"
	}
	fmt.Fprintln(tw, head)
	for _, g := range inv.GPUs {
		id := g.RenderNode
		if id == "" {
			id = g.UUID
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s", g.Index, dash(g.Name), dash(g.Arch), memory(g.MemoryBytes), dash(g.PCIBusID), dash(id))
		if smi {
			fmt.Fprint(tw, smiColumns(g.SMI))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// smiColumns are the table's columns from a management library: memory in use, partition
// modes (AMD: compute/memory), temperature and how many processes use the GPU.
func smiColumns(s *gpu.SMI) string {
	if s == nil {
		return "\t-\t-\t-\t-"
	}
	part := s.ComputePartition
	if s.MemoryPartition != "" {
		part += "/" + s.MemoryPartition
	}
	temp := "-"
	if s.TemperatureC != nil {
		temp = fmt.Sprintf("%d °C", *s.TemperatureC)
	}
	procs := len(s.Processes)
	if s.ProcessesTotal > procs {
		procs = s.ProcessesTotal
	}
	used := memory(s.MemoryUsedBytes)
	if s.MemoryUsedBytes == 0 {
		used = "0"
	}
	return fmt.Sprintf("\t%s\t%s\t%s\t%d", used, dash(strings.TrimPrefix(part, "/")), temp, procs)
}

// memory is a byte count in GiB ("192 GiB", "79.6 GiB"), MiB below 1 GiB, "-" if unknown.
func memory(b uint64) string {
	switch {
	case b == 0:
		return "-"
	case b < 1<<30:
		return fmt.Sprintf("%d MiB", b>>20)
	case b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
