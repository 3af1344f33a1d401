package slurm

import (
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/scheduler"
)

// Overrides are sbatch options given on the command line; a nil field was not given and
// leaves the manifest's value.
type Overrides struct {
	Nodes       *int
	Partition   *string
	Account     *string
	QOS         *string
	Time        *string
	GPUsPerNode *int
	Exclusive   *bool
	SbatchArgs  []string // appended after the manifest's sbatchArgs
}

// JobFor is the job's sbatch options for a manifest: the command line's overrides, then
// the manifest's slurm: block, then the defaults (one node; the GPUs the manifest needs).
// The caller sets what only it knows: the benchctl binary, paths, benchmarks, requeue.
func JobFor(m *manifest.Manifest, o Overrides) Job {
	return JobForBenchmarks(m, m.Benchmarks, o)
}

// JobForBenchmarks is JobFor for a job that runs only the selected benchmarks (--benchmarks,
// --tags): the GPUs per node asked of Slurm are the most those need (GPUsNeeded).
func JobForBenchmarks(m *manifest.Manifest, selected []manifest.Benchmark, o Overrides) Job {
	s := m.Slurm
	j := Job{Name: "benchctl-" + m.Name, Nodes: s.Nodes, Partition: s.Partition, Account: s.Account, QOS: s.QOS,
		Time: s.Time, GPUsPerNode: s.GPUsPerNode, Exclusive: s.Exclusive, SbatchArgs: s.SbatchArgs, Manifest: m.Path}
	if j.GPUsPerNode == nil {
		if n := scheduler.GPUsNeeded(m.GPU, selected); n > 0 {
			j.GPUsPerNode = &n
		}
	}
	if x := m.Experiment; x != nil {
		// An experiment's largest variant needs max(nodes) nodes: asked for unless --nodes
		// says how many (Validate refuses fewer).
		j.MinNodes = x.MaxNodes()
		j.Nodes = max(j.Nodes, j.MinNodes)
	}
	if o.Nodes != nil {
		j.Nodes = *o.Nodes
	}
	if o.Partition != nil {
		j.Partition = *o.Partition
	}
	if o.Account != nil {
		j.Account = *o.Account
	}
	if o.QOS != nil {
		j.QOS = *o.QOS
	}
	if o.Time != nil {
		j.Time = *o.Time
	}
	if o.GPUsPerNode != nil {
		g := *o.GPUsPerNode
		j.GPUsPerNode = &g
	}
	if o.Exclusive != nil {
		j.Exclusive = *o.Exclusive
	}
	if len(o.SbatchArgs) > 0 {
		j.SbatchArgs = append(append([]string{}, s.SbatchArgs...), o.SbatchArgs...)
	}
	return j
}
