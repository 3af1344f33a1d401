package runner

import (
	"fmt"
	"path"
	"strings"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/launch"
)

// DeepSpeedHostfile is where a deepspeed job of several nodes finds its hostfile in the
// container: the benchmark's output folder, which benchctl writes it to before the
// container starts (deepSpeedHostfile).
const DeepSpeedHostfile = OutputDir + "/deepspeed_hostfile"

// LauncherError is a launcher that cannot run on this job's nodes (exit 4).
type LauncherError = launch.Error

// launchOf is the launch context of benchmark b on node n with acc's GPUs.
func launchOf(b manifest.Benchmark, n Node, acc GPUAccess) launch.Context {
	c := launch.Context{NNodes: max(n.World, 1), Rank: n.Rank, NProc: max(len(acc.GPUs), 1), Port: n.MasterPort,
		Addr: n.MasterAddr, Model: b.Name, Hostfile: DeepSpeedHostfile, Ranks: b.RanksPerNode}
	if n.Source == jobdir.SourceSlurm || n.Source == jobdir.SourceKubernetes { // elsewhere only the master's and this node's names are known
		c.Hosts = n.Hosts
	}
	if b.Model != nil && b.Model.Distributed != nil {
		c.Opts = *b.Model.Distributed
	}
	return c
}

// checkLauncher says why benchmark b's launcher cannot run on node n's job with acc's
// GPUs, or on a variant's fewer nodes; nil when it can.
func checkLauncher(b manifest.Benchmark, n Node, acc GPUAccess, x *manifest.Experiment) error {
	worlds := []int{n.World}
	if x != nil {
		for _, v := range x.Variants {
			if v.Nodes > 0 && v.Nodes < n.World {
				worlds = append(worlds, v.Nodes)
			}
		}
	}
	if err := launch.CheckRanks(b, n.Host, len(acc.GPUs)); err != nil {
		return err
	}
	for _, w := range worlds {
		if _, err := launch.Env(b.Launcher, launchOf(b, variantNode(n, w), acc)); err != nil {
			return &LauncherError{Msg: fmt.Sprintf("benchmark %s: %v", b.Name, err)}
		}
	}
	return nil
}

// deepSpeedHostfile is the hostfile of a deepspeed benchmark of several nodes (one line
// per host: "NAME slots=GPUS", as madengine writes it), or nil for any other benchmark.
func deepSpeedHostfile(b manifest.Benchmark, n Node, acc GPUAccess) []byte {
	c := launchOf(b, n, acc)
	if b.Launcher != manifest.LauncherDeepSpeed || c.NNodes < 2 || len(c.Hosts) != c.NNodes {
		return nil
	}
	var out strings.Builder
	for _, h := range c.Hosts {
		fmt.Fprintf(&out, "%s slots=%d\n", h, c.NProc)
	}
	return []byte(out.String())
}

// writeDeepSpeedHostfile writes a deepspeed hostfile into the results folder of run name
// (mounted at OutputDir), never through a link a co-writer planted.
func writeDeepSpeedHostfile(nf *jobdir.NodeFolder, name string, data []byte) error {
	root, err := nf.MkdirAll(jobdir.ResultsFolder, 0o755)
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := safefile.OpenDirAt(root, name)
	if err != nil {
		return err
	}
	defer d.Close()
	return atomicfile.WriteFileAt(d, path.Base(DeepSpeedHostfile), data, 0o644)
}
