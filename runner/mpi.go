package runner

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/internal/agentwire"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/launch"
	"github.com/benchctl/benchctl/runner/remote"
)

// mpiNode is this node's part of the job's MPI benchmarks: the agent's folder and, in a
// job of several nodes, the remote-launch service.
type mpiNode struct {
	dir   string          // the agent's folder on this node
	agent string          // the agent's path where the benchmark runs
	svc   *remote.Service // nil for one node
}

// startMPI places the agent and starts the remote-launch service when a benchmark has an
// MPI launcher, and tells rank 0 where every node's service is. Every rank decides alike
// (the same manifest), so every rank meets at the "remote" phase or none does.
func (r *nodeRun) startMPI(ctx context.Context, eng Engine, benches []manifest.Benchmark, imgs *distribution.Images) (func(), error) {
	if !slices.ContainsFunc(benches, func(b manifest.Benchmark) bool { return manifest.MPILauncher(b.Launcher) }) {
		return func() {}, nil
	}
	for _, b := range benches { // the launcher's program where rank 0's benchmark runs
		if manifest.MPILauncher(b.Launcher) && r.node.Rank == 0 {
			img := imgs.For(b.Name)
			if err := remote.CheckLauncher(ctx, eng, img.RunRef(), cmp.Or(img.Ref, img.ID), b.Launcher, map[string]string{LabelJob: r.node.JobID}); err != nil {
				r.fail(err, exitcode.Invalid)
				return nil, err
			}
		}
	}
	bin, err := remote.AgentBinary()
	if err != nil {
		err = &LauncherError{Msg: err.Error()}
		r.fail(err, exitcode.Invalid)
		return nil, err
	}
	dir, err := remote.AgentFolder(bin)
	if err != nil {
		r.fail(err, exitcode.Failure)
		return nil, err
	}
	m := &mpiNode{dir: dir, agent: remote.AgentPath(r.o.Manifest.Process(), dir)}
	r.mpi = m
	done := func() { os.RemoveAll(dir) }
	if r.node.World == 1 {
		return done, nil
	}
	if m.svc, err = remote.Start(remote.Config{Chan: r.chanCfg, RT: r.rt, Agent: m.agent, Log: r.log}); err == nil && r.node.Rank == 0 {
		err = m.svc.ServeAgent(filepath.Join(dir, agentwire.SocketName))
	}
	if err == nil {
		err = remote.SharePeers(r.barrierCtx(ctx), m.svc, r.leader, r.worker)
	}
	done = func() { m.svc.Close(); os.RemoveAll(dir) }
	if err != nil {
		r.fail(err, exitcode.Failure)
		done()
		return nil, err
	}
	return done, nil
}

// mpiSpec makes spec an MPI launcher's part on node: rank 0 runs the launcher's line
// around the command, with the agent's environment; the other ranks wait for the ranks
// rank 0 starts beside them. Every node sees the agent at the same path.
func (r *nodeRun) mpiSpec(spec Spec, b manifest.Benchmark, node Node, gpus GPUAccess) (Spec, error) {
	m := r.mpi
	if !r.o.Manifest.Process() {
		spec.Mounts = append(slices.Clone(spec.Mounts), manifest.Mount{Source: m.dir, Target: remote.AgentDir, ReadOnly: true})
	}
	if node.Rank != 0 {
		spec.Command, spec.Tools = []string{m.agent, "wait"}, nil
		return spec, nil
	}
	line, err := launch.MPILine(b.Launcher, launchOf(b, node, gpus), b.RanksPerNode, m.agent, !r.o.Manifest.Process(), spec.Command)
	if err != nil {
		return spec, err
	}
	spec.Command = line.Argv
	line.Env[agentwire.EnvSocket] = filepath.Join(filepath.Dir(m.agent), agentwire.SocketName)
	if m.svc != nil {
		line.Env[agentwire.EnvToken] = m.svc.TokenValue()
	}
	spec.Env = launch.WithEnv(spec.Env, line.Env, agentwire.EnvToken)
	r.log.Info("MPI launcher", "benchmark", b.Name, "launcher", b.Launcher, "ranks", line.Ranks, "line", strings.Join(line.Argv, " "))
	return spec, nil
}

// mpiStarted and mpiEnded tell the remote-launch service about a run's benchmark on this
// node: rank 0 ends the waiting nodes' part when its launcher ends.
func (r *nodeRun) mpiStarted(run, id string) {
	if r.mpi != nil && r.mpi.svc != nil {
		r.mpi.svc.Running(run, id)
	}
}

// A waiting node's part that rank 0's end stopped has succeeded, whatever its exit.
func (r *nodeRun) mpiEnded(ctx context.Context, run string, ranks int, res execResult) execResult {
	if r.mpi == nil {
		return res
	}
	if r.node.Rank == 0 && res.Outcome == OutcomeFailure && res.Err != nil {
		if why := launch.DeadRank(filepath.Join(r.nd.Path, jobdir.LogName(run))); why != "" {
			res.Err = fmt.Errorf("%w: %s", res.Err, why)
		}
	}
	if r.mpi.svc == nil {
		return res
	}
	r.mpi.svc.Done(run)
	if r.node.Rank == 0 {
		if err := r.mpi.svc.EndRun(context.WithoutCancel(ctx), run, ranks); err != nil {
			r.log.Warn(err.Error(), "benchmark", run)
		}
	} else if res.Outcome == OutcomeFailure && r.mpi.svc.EndedByLauncher(run) {
		return execResult{Outcome: OutcomeSuccess}
	}
	return res
}
