package commands

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/jsonout"

	"github.com/benchctl/benchctl/gpu"
)

// GPUsOptions are benchctl gpus' flags, and what it asks of the machine.
type GPUsOptions struct {
	Vendor    string
	Output    string
	Json      bool          // hidden: --json, the old spelling of -o json
	SysfsRoot string        // hidden: a recorded sysfs tree instead of /
	Source    string        // AMD: auto, amdsmi, sysfs or amd-smi (--amd-source is its old spelling)
	Watch     bool          // --watch: sample the GPUs until Ctrl-C
	Interval  time.Duration // --watch's interval
	Deps      GPUsDeps      // what gpus asks of the machine
}

// DetectGPUs is gpu.Detect; tests pass a fake.
type DetectGPUs func(context.Context, gpu.Options) (gpu.Inventory, error)

// GPUsDeps are what gpus asks of the machine; tests pass fakes.
type GPUsDeps struct {
	Detect DetectGPUs
	// snapshot is gpu.Snapshot: each NVIDIA GPU's state (memory in use, temperature,
	// power, processes) for the table and JSON; nil asks for none.
	Snapshot DetectGPUs
	// options, when not nil, changes the gpu.Options gpus asks with (tests: gpu.WithNVML).
	Options  func(gpu.Options) gpu.Options
	Open     openSampler      // --watch's telemetry
	Now      func() time.Time // --watch's sample times
	Hostname func() (string, error)
	Lookup   func(string) (string, bool) // SLURM_NTASKS, SLURM_STEP_NUM_TASKS
}

// WatchDefault is --watch's interval when it is given without one.
const WatchDefault = "1s"

// GPUs lists this node's GPUs, or with --watch samples them until the context ends.
func GPUs(ctx context.Context, io iostreams.Streams, opts *GPUsOptions) error {
	deps := opts.Deps
	gopts := gpu.Options{Vendor: opts.Vendor, SysfsRoot: opts.SysfsRoot, AMDSource: opts.Source}
	source := opts.Source != gpu.SourceAuto // a source asked for: AMD's
	if source && opts.Vendor == gpu.VendorNVIDIA {
		return exitcode.Usagef("leave out --source with --vendor nvidia (NVML answers for NVIDIA)", "--source %s is where AMD GPU facts come from, not NVIDIA's", opts.Source)
	}
	if source {
		gopts.Vendor = gpu.VendorAMD // the source asked for answers, or says why not
	}
	if deps.Options != nil {
		gopts = deps.Options(gopts)
	}
	inv, err := deps.Detect(ctx, gopts)
	if err != nil {
		if source {
			return fmt.Errorf("--source %s: %w", opts.Source, err)
		}
		return err
	}
	if inv.Vendor == gpu.VendorNVIDIA && !opts.Watch && deps.Snapshot != nil {
		inv = withState(ctx, deps.Snapshot, gopts, inv)
	}
	for _, n := range inv.Notes {
		slog.Info(n)
	}
	host := gpusHost(deps)
	if len(inv.GPUs) == 0 {
		fmt.Fprintln(io.ErrOut(), prefixHost(host, "no GPUs found"))
	}
	if opts.Watch {
		if len(inv.GPUs) == 0 {
			return nil
		}
		watchHost := ""
		if host.several {
			watchHost = host.name
		}
		return gpusWatch(ctx, io, inv, deps.Open, deps.Now, opts, watchHost)
	}
	if opts.Output == "json" {
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

func gpusHost(deps GPUsDeps) gpusHostInfo {
	var h gpusHostInfo
	if deps.Hostname != nil {
		h.name, _ = deps.Hostname()
	}
	if deps.Lookup != nil {
		h.several = severalNodesPrint(deps.Lookup)
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
func withState(ctx context.Context, snapshot DetectGPUs, o gpu.Options, inv gpu.Inventory) gpu.Inventory {
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
