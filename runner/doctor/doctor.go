package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benchctl/benchctl/runner/gpupath"

	"github.com/benchctl/benchctl/runner/noderecord"
	"github.com/benchctl/benchctl/workload"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner"
)

// Check is one line of `benchctl doctor` (runner's, whose GPU devices line doctor shows).
type Check = runner.Check

// Options configure Run.
type Options struct {
	SharedDir string
	Manifest  *manifest.Manifest // optional: checks GPUs and disk against it
	Lookup    func(string) (string, bool)
	Engine    func() (Engine, error) // connects to this node's engine (cmd: the Docker client)
	// EngineKind is the engine asked for (--engine, the manifest's engine:; "": any).
	EngineKind string
	// rootless is where the rootless checks read (tests; zero: this node).
	rootless rootlessSources
	// MaxSkew is the clock difference to the shared filesystem that fails (default 2 s).
	MaxSkew time.Duration
	// PeerWait bounds how long rank 0 waits for the other nodes' markers (default 20 s).
	PeerWait time.Duration
	// GPUSnapshot asks the GPU management library what the GPUs do (nil: gpu.Snapshot).
	GPUSnapshot func(context.Context, gpu.Options) (gpu.Inventory, error)
	// GPUDetect reads the GPU inventory for the node record (nil: gpu.Detect).
	GPUDetect func(context.Context, gpu.Options) (gpu.Inventory, error)
	// Version is benchctl's, for the node record.
	Version string
	// Node is this process's node context (scheduler.DetectNode), or NodeErr why it could
	// not be read: doctor reports either as its first check.
	Node    runner.Node
	NodeErr error
}

// Run checks that this node can run benchmarks. Under srun every node runs it; nodes
// leave markers in the shared directory so rank 0 can tell that all see the same folder.
func Run(ctx context.Context, o Options) []Check {
	if o.MaxSkew == 0 {
		o.MaxSkew = 2 * time.Second
	}
	if o.PeerWait == 0 {
		o.PeerWait = 20 * time.Second
	}
	var checks []Check
	add := func(c Check) { checks = append(checks, c) }

	node, nerr := o.Node, o.NodeErr
	if nerr == nil && o.Node.World < 1 {
		nerr = runner.ErrNoNode
	}
	switch {
	case nerr != nil:
		add(Check{Name: "node context", Detail: nerr.Error(), Fix: "submit with -N <nodes> --ntasks-per-node=1 and run benchctl under srun; outside Slurm set NODE_RANK, NNODES, MASTER_ADDR and BENCHCTL_JOB_ID together"})
	case node.Source == "slurm":
		add(Check{Name: "slurm environment", OK: true, Detail: fmt.Sprintf("job %s, rank %d of %d on %s, one task per node", node.JobID, node.Rank, node.World, node.Host)})
	default:
		add(Check{Name: "node context", OK: true, Detail: fmt.Sprintf("rank %d of %d on %s (%s)", node.Rank, node.World, node.Host, node.Source)})
	}

	var info workload.Facts
	var facts *gpupath.EngineFacts // for the GPU devices' way
	eng, err := o.Engine()
	if err == nil {
		defer eng.Close()
		var cs []Check
		var id image.Identity
		info, id, cs, err = engineChecks(ctx, o, eng)
		checks = append(checks, cs...)
		if err == nil { // engineChecks fails when /info does: the engine line says why
			f := gpupath.FactsOfIdentity(id, &info)
			facts = &f
		}
	}
	if err != nil {
		add(engineFailed(o.EngineKind, err))
		eng = nil
	}

	vendor := gpu.VendorAuto
	if o.Manifest != nil && o.Manifest.GPU.Vendor != "" {
		vendor = o.Manifest.GPU.Vendor
	}
	src := noderecord.Sources{Lookup: o.Lookup, Vendor: vendor, Version: o.Version, Detect: o.GPUDetect, Snapshot: o.GPUSnapshot}
	if eng != nil {
		src.Engine = apiFacts{eng}
	}
	if nerr == nil {
		src.HostRoot = noderecord.HostRoot(o.Lookup, node.Rank)
	}
	rec := noderecord.Gather(ctx, src)
	rec.Job, rec.Attempt, rec.Rank, rec.Host = node.JobID, node.Attempt, node.Rank, node.Host
	add(recordCheck(rec))

	checks = append(checks, o.sharedChecks(ctx, node, nerr == nil, rec)...)

	if o.Manifest != nil {
		acc, err := runner.SelectGPUs(o.Manifest.GPU, o.Lookup, "")
		if err != nil {
			add(Check{Name: "gpus", Detail: err.Error(), Fix: "run on a node with the manifest's GPUs, or change gpu.vendor / gpu.count"})
		} else {
			d := "no GPUs used (gpu.vendor none)"
			if acc.Vendor != manifest.VendorNone {
				d = strings.Join(acc.Describe(), "; ")
			}
			add(Check{Name: "gpus", OK: true, Detail: d})
			if facts != nil {
				checks = append(checks, runner.GPUDevicesCheck(*facts, acc, o.Manifest)...)
			}
			checks = append(checks, o.gpuStateChecks(ctx, acc)...)
		}
		checks = append(checks, o.diskChecks(info, eng != nil)...)
	}
	return checks
}

// gpuStateChecks: which GPU management library answers (its version, or why none did),
// and whether the selected GPUs are busy: a process already on one skews the benchmark.
// Without a library the first is a note, not a failure (benchctl reads the GPUs from
// sysfs or NVML's absence alike), and the second cannot be checked.
func (o Options) gpuStateChecks(ctx context.Context, acc runner.GPUAccess) []Check {
	if acc.Vendor != gpu.VendorAMD && acc.Vendor != gpu.VendorNVIDIA {
		return nil
	}
	snapshot := o.GPUSnapshot
	if snapshot == nil {
		snapshot = gpu.Snapshot
	}
	inv, err := snapshot(ctx, gpu.Options{Vendor: acc.Vendor})
	if err != nil {
		var nf *gpu.NotFoundError
		why := err.Error()
		if errors.As(err, &nf) {
			why = nf.Reason
		}
		return []Check{{Name: "gpu library", OK: true, Detail: "none answered (" + why + "); the GPUs are read without it, " +
			"so there is no memory-in-use, partition or process information, and no busy check"}}
	}
	lib := inv.Library
	if lib == "" {
		lib = inv.Source
		if inv.Driver != "" {
			lib += ", driver " + inv.Driver
		}
	}
	if p := partitions(inv.GPUs); p != "" {
		lib += "; " + p
	}
	for _, n := range inv.Notes {
		lib += "; " + n
	}
	out := []Check{{Name: "gpu library", OK: true, Detail: lib}}
	byPCI := map[string]gpu.GPU{}
	for _, g := range inv.GPUs {
		byPCI[g.PCIBusID] = g
	}
	var busy []string
	for _, sel := range acc.GPUs {
		g, ok := byPCI[sel.PCIBusID]
		if !ok || g.SMI == nil || len(g.SMI.Processes) == 0 {
			continue
		}
		var ps []string
		for _, p := range g.SMI.Processes {
			ps = append(ps, fmt.Sprintf("pid %d %s (%s)", p.PID, p.Name, manifest.FormatBytes(int64(p.MemoryBytes))))
		}
		busy = append(busy, fmt.Sprintf("GPU %d (%s) runs %s", sel.Index, sel.PCIBusID, strings.Join(ps, ", ")))
	}
	if len(busy) > 0 {
		return append(out, Check{Name: "gpus idle", Detail: strings.Join(busy, "; "),
			Fix: "wait for those processes to end, or give the job other GPUs (Slurm's allocation, ROCR_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES)"})
	}
	return append(out, Check{Name: "gpus idle", OK: true, Detail: fmt.Sprintf("no processes on the %d selected GPUs", len(acc.GPUs))})
}

// partitions is "compute partition CPX, memory partition NPS1" when every GPU says the
// same, "" when the library does not say.
func partitions(gpus []gpu.GPU) string {
	var compute, memory string
	for i, g := range gpus {
		if g.SMI == nil || (i > 0 && (g.SMI.ComputePartition != compute || g.SMI.MemoryPartition != memory)) {
			return ""
		}
		compute, memory = g.SMI.ComputePartition, g.SMI.MemoryPartition
	}
	var out []string
	if compute != "" {
		out = append(out, "compute partition "+compute)
	}
	if memory != "" {
		out = append(out, "memory partition "+memory)
	}
	return strings.Join(out, ", ")
}

// sharedChecks: writable, the same folder on every node (under a multi-node job), clock.
// Under a multi-node srun, each node leaves its record beside its marker, and rank 0
// compares them once every marker is there (agreementCheck).
func (o Options) sharedChecks(ctx context.Context, node runner.Node, haveNode bool, rec *jobdir.NodeRecord) []Check {
	var out []Check
	if o.SharedDir == "" {
		return []Check{{Name: "shared directory", Detail: "not set", Fix: "set BENCHCTL_SHARED_DIR (or --shared-dir) to a folder every node mounts at the same path"}}
	}
	layout := jobdir.Layout{Shared: o.SharedDir}
	dir := layout.Doctor("")
	if haveNode {
		dir = layout.Doctor(node.DirName())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return []Check{{Name: "shared directory", Detail: err.Error(), Fix: "create " + o.SharedDir + " and make it writable for this user on every node"}}
	}
	marker := jobdir.DoctorMarker(dir, node.Rank)
	multi := haveNode && node.World > 1
	if multi {
		if err := writeDoctorRecord(dir, node.Rank, rec); err != nil {
			return []Check{{Name: "shared directory", Detail: err.Error(), Fix: "make " + o.SharedDir + " writable for this user"}}
		}
	}
	now := time.Now()
	if err := os.WriteFile(marker, []byte(node.Host+" "+strconv.FormatInt(now.UnixNano(), 10)+"\n"), 0o644); err != nil {
		return []Check{{Name: "shared directory", Detail: err.Error(), Fix: "make " + o.SharedDir + " writable for this user"}}
	}
	out = append(out, Check{Name: "shared directory", OK: true, Detail: o.SharedDir + " is writable"})
	if st, err := os.Stat(marker); err == nil {
		skew := now.Sub(st.ModTime())
		c := Check{Name: "clock", OK: skew.Abs() <= o.MaxSkew, Detail: fmt.Sprintf("%s differs from the shared filesystem's clock by %s", node.Host, skew.Round(time.Millisecond))}
		if !c.OK {
			c.Fix = "run chrony or ntpd on every node; timestamps in status files and logs are compared across nodes"
		}
		out = append(out, c)
	}
	if !haveNode || node.World == 1 {
		os.Remove(marker)
		os.Remove(dir)
		return out
	}
	// Every node waits until it sees every other node's marker: the same folder everywhere.
	deadline := time.Now().Add(o.PeerWait)
	for {
		var missing []string
		for r := 0; r < node.World; r++ {
			if _, err := os.Stat(jobdir.DoctorMarker(dir, r)); errors.Is(err, os.ErrNotExist) {
				missing = append(missing, node.Hosts[r])
			}
		}
		if len(missing) == 0 {
			out = append(out, Check{Name: "same shared directory on every node", OK: true, Detail: fmt.Sprintf("all %d nodes wrote to %s", node.World, dir)})
			if node.Rank == 0 {
				out = append(out, agreementCheck(dir, node.Hosts))
			}
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			out = append(out, Check{Name: "same shared directory on every node", Detail: "no marker from " + strings.Join(missing, ", ") + " in " + dir,
				Fix: "mount the same shared filesystem at " + o.SharedDir + " on every node (or set BENCHCTL_SHARED_DIR per site)"})
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return out
}

// diskChecks: room in the cache for the manifest's image, and in the engine's data root
// when it is on this machine.
func (o Options) diskChecks(info workload.Facts, haveEngine bool) []Check {
	var out []Check
	need := int64(0)
	source := "unknown until it is built"
	uses := o.Manifest.Images(o.Manifest.Benchmarks)
	cached := 0
	for _, use := range uses {
		if !use.Image.Builds() {
			continue
		}
		if key, err := image.Key(image.InputFromManifest(o.Manifest.WithImage(use.Image))); err == nil {
			c := image.CacheLayout{Shared: o.SharedDir}.Cache()
			if e, err := c.Lookup(key); err == nil {
				need += e.Size
				cached++
			}
		}
	}
	switch {
	case cached == 1 && len(uses) == 1:
		source = "the cached tar"
	case cached > 0:
		source = fmt.Sprintf("the cached tars of %d of its %d images", cached, len(uses))
	}
	check := func(name, dir string, mult int64, fix string) {
		free, err := freeBytes(dir)
		if err != nil {
			out = append(out, Check{Name: name, OK: true, Detail: "free space unknown: " + err.Error()})
			return
		}
		c := Check{Name: name, OK: free >= need*mult+(1<<30), Detail: fmt.Sprintf("%s free in %s; the image needs %s (%s)", manifest.FormatBytes(free), dir, manifest.FormatBytes(need*mult), source)}
		if !c.OK {
			c.Fix = fix
		}
		out = append(out, c)
	}
	check("cache disk space", o.SharedDir, 1, "free space in the shared directory or prune the cache: benchctl cache prune --keep 5")
	if haveEngine && info.DataRoot != "" {
		if _, err := os.Stat(info.DataRoot); err == nil {
			check("engine disk space", info.DataRoot, 2, "free space in the engine's data root (docker image prune) or move it to a larger disk")
		}
	}
	return out
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
