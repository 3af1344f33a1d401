package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/jsonout"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/gpu"
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
	// snapshot is gpu.Snapshot: each NVIDIA GPU's state (memory in use, temperature,
	// power, processes) for the table and JSON; nil asks for none.
	snapshot detectGPUs
	// options, when not nil, changes the gpu.Options gpus asks with (tests: gpu.WithNVML).
	options  func(gpu.Options) gpu.Options
	open     openSampler      // --watch's telemetry
	now      func() time.Time // --watch's sample times
	hostname func() (string, error)
	lookup   func(string) (string, bool) // SLURM_NTASKS, SLURM_STEP_NUM_TASKS
}

func newGpusCmd(io iostreams.Streams) *cobra.Command {
	return newGpusCmdDeps(io, gpusDeps{detect: gpu.Detect, snapshot: gpu.Snapshot, open: gpu.OpenSampler, now: time.Now, hostname: os.Hostname, lookup: os.LookupEnv})
}

// newGpusCmdWith is gpus with detect in place of gpu.Detect (and no snapshot): tests.
func newGpusCmdWith(io iostreams.Streams, detect detectGPUs) *cobra.Command {
	return newGpusCmdDeps(io, gpusDeps{detect: detect, open: gpu.OpenSampler, now: time.Now, hostname: os.Hostname, lookup: os.LookupEnv})
}

func newGpusCmdDeps(io iostreams.Streams, deps gpusDeps) *cobra.Command {
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

func gpusRun(ctx context.Context, io iostreams.Streams, deps gpusDeps, opts *gpusOptions) error {
	gopts := gpu.Options{Vendor: opts.vendor, SysfsRoot: opts.sysfsRoot, AMDSource: opts.source}
	source := opts.source != gpu.SourceAuto // a source asked for: AMD's
	if source && opts.vendor == gpu.VendorNVIDIA {
		return usagef("leave out --source with --vendor nvidia (NVML answers for NVIDIA)", "--source %s is where AMD GPU facts come from, not NVIDIA's", opts.source)
	}
	if source {
		gopts.Vendor = gpu.VendorAMD // the source asked for answers, or says why not
	}
	if deps.options != nil {
		gopts = deps.options(gopts)
	}
	inv, err := deps.detect(ctx, gopts)
	if err != nil {
		if source {
			return fmt.Errorf("--source %s: %w", opts.source, err)
		}
		return err
	}
	if inv.Vendor == gpu.VendorNVIDIA && !opts.watch && deps.snapshot != nil {
		inv = withState(ctx, deps.snapshot, gopts, inv)
	}
	for _, n := range inv.Notes {
		slog.Info(n)
	}
	host := gpusHost(deps)
	if len(inv.GPUs) == 0 {
		fmt.Fprintln(io.ErrOut(), prefixHost(host, "no GPUs found"))
	}
	if opts.watch {
		if len(inv.GPUs) == 0 {
			return nil
		}
		watchHost := ""
		if host.several {
			watchHost = host.name
		}
		return gpusWatch(ctx, io, inv, deps.open, deps.now, opts, watchHost)
	}
	if opts.output == "json" {
		doc := gpusDocument{Host: host.name, Inventory: inv}
		if host.several {
			return jsonout.Line(io.Out(), doc) // one compact line per node
		}
		return writeJSON(io.Out(), doc)
	}
	if len(inv.GPUs) == 0 {
		return nil
	}
	return writeGPUTable(io.Out(), inv, host)
}

// gpusDocument is what gpus -o json prints: the inventory and the host it is of.
type gpusDocument struct {
	Host string `json:"host"`
	gpu.Inventory
}

// gpusHostInfo is the host gpus runs on, and whether several nodes print at once (srun
// -N 4 benchctl gpus: more than one task in the step), so that each line names its host.
type gpusHostInfo struct {
	name    string
	several bool
}

func gpusHost(deps gpusDeps) gpusHostInfo {
	var h gpusHostInfo
	if deps.hostname != nil {
		h.name, _ = deps.hostname()
	}
	if deps.lookup != nil {
		h.several = severalNodesPrint(deps.lookup)
	}
	return h
}

// prefixHost is line with "host: " in front when several nodes print.
func prefixHost(h gpusHostInfo, line string) string {
	if h.several && h.name != "" {
		return h.name + ": " + line
	}
	return line
}

// withState is inv with each NVIDIA GPU's state from NVML (gpu.Snapshot): memory in use,
// temperature, power and processes, as the AMD SMI library gives for AMD. Without an
// answer (within 10 s) inv is kept, and a note says why.
func withState(ctx context.Context, snapshot detectGPUs, o gpu.Options, inv gpu.Inventory) gpu.Inventory {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	o.Vendor = gpu.VendorNVIDIA
	snap, err := snapshot(ctx, o)
	if err != nil || len(snap.GPUs) != len(inv.GPUs) {
		why := "it lists another number of GPUs"
		if err != nil {
			why = err.Error()
		}
		inv.Notes = append(inv.Notes, "no GPU state (memory in use, temperature, power, processes) from NVML: "+why)
		return inv
	}
	snap.Notes = append(inv.Notes, snap.Notes...)
	return snap
}

// writeGPUTable prints a one-line summary (naming the host when several nodes print) and
// one row per GPU.
func writeGPUTable(w io.Writer, inv gpu.Inventory, host gpusHostInfo) error {
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
	fmt.Fprintln(w, prefixHost(host, fmt.Sprintf("%s (%s)", n, strings.Join(about, ", "))))
	var cols smiCols
	for _, g := range inv.GPUs {
		if g.SMI != nil {
			cols.smi = true
			cols.partition = cols.partition || g.SMI.ComputePartition != "" || g.SMI.MemoryPartition != ""
			cols.power = cols.power || g.SMI.PowerWatts > 0
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "INDEX\tNAME\tARCH\tMEMORY\tPCI\tRENDER/UUID"
	if cols.smi {
		head += "\tUSED" + cols.pick("\tPARTITION", "") + "\tTEMP" + cols.pick("", "\tPOWER") + "\tPROCESSES"
	}
	fmt.Fprintln(tw, head)
	for _, g := range inv.GPUs {
		id := g.RenderNode
		if id == "" {
			id = g.UUID
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s", g.Index, dash(g.Name), dash(g.Arch), memory(g.MemoryBytes), dash(g.PCIBusID), dash(id))
		if cols.smi {
			fmt.Fprint(tw, smiColumns(g.SMI, cols))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// smiCols say which of the management library's columns the table has: those of any GPU
// (partitions: AMD; power drawn: NVIDIA).
type smiCols struct{ smi, partition, power bool }

// pick is partition when the table has the partition column, power when it has the power
// one ("" for a column it lacks).
func (c smiCols) pick(partition, power string) string {
	out := ""
	if c.partition {
		out += partition
	}
	if c.power {
		out += power
	}
	return out
}

// smiColumns are the table's columns from a management library: memory in use, partition
// modes (AMD: compute/memory), temperature, power (drawn/cap, in watts) and how many
// processes use the GPU.
func smiColumns(s *gpu.SMI, cols smiCols) string {
	if s == nil {
		return "\t-" + cols.pick("\t-", "") + "\t-" + cols.pick("", "\t-") + "\t-"
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
	power := "-"
	switch {
	case s.PowerWatts > 0 && s.PowerCapWatts > 0:
		power = fmt.Sprintf("%.0f/%.0f W", s.PowerWatts, s.PowerCapWatts)
	case s.PowerWatts > 0:
		power = fmt.Sprintf("%.0f W", s.PowerWatts)
	}
	return fmt.Sprintf("\t%s%s\t%s%s\t%d", used, cols.pick("\t"+dash(strings.TrimPrefix(part, "/")), ""), temp, cols.pick("", "\t"+power), procs)
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
