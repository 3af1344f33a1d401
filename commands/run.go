package commands

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/timeline"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/workload/engine/podmanservice"
)

// RunOptions are benchctl run's flags.
type RunOptions struct {
	SysfsRoot      string
	Src            ManifestSource
	SharedDir      string
	Record         string
	Benchmarks     []string
	DryRun         bool
	Output         string
	BarrierTimeout time.Duration
	Heartbeat      time.Duration
	NoSkipArch     bool
	Tools          ToolFlags
	Engine         string
	Runtime        string // --runtime: over the manifest's runtime:
}

// Run runs the manifest's benchmarks on this node, as one node of a job.
func Run(ctx context.Context, io iostreams.Streams, opts *RunOptions) error {
	m, err := opts.Src.load()
	if err != nil {
		return err
	}
	if err := opts.Tools.apply(ctx, m); err != nil {
		return err
	}
	if err := applyRuntime(m, opts.Runtime, opts.Engine); err != nil {
		return err
	}
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	node, err := detectNode(os.LookupEnv)
	if err != nil {
		return err
	}
	ro := runner.Options{Node: node, Manifest: m, SharedDir: dir, Benchmarks: opts.Benchmarks, Lookup: os.LookupEnv,
		Environ: os.Environ(), Version: CurrentBuild().Version, BarrierTimeout: opts.BarrierTimeout, Heartbeat: opts.Heartbeat, NoSkipGPUArch: opts.NoSkipArch, SysfsRoot: opts.SysfsRoot,
		EngineKind: engineKind(opts.Engine, m), Stream: io.ErrOut(), Catalog: models.JobCatalog{}}
	ro.Engine = func() (runner.Engine, error) { return image.ConnectKind(ro.EngineKind) }
	if !opts.DryRun {
		// Podman asked for and no service answering: the run starts its own, once, when it
		// first needs the engine, and stops it when the run ends.
		var svc *podmanservice.Service
		defer func() {
			if svc != nil {
				svc.Stop()
			}
		}()
		ro.Engine = func() (runner.Engine, error) {
			if svc == nil {
				s, err := ownPodmanService(ctx, ro.EngineKind, node.JobID, node.Rank)
				if err != nil {
					return nil, err
				}
				svc = s
			}
			if svc != nil {
				return image.ConnectDialing(svc.Host, svc.DialContext)
			}
			return image.ConnectKind(ro.EngineKind)
		}
	}
	if opts.Record != "" {
		if ro.Records, err = image.ReadRecords(opts.Record); err != nil {
			return exitcode.Usagef("pass the file written by benchctl build --record", "%v", err)
		}
	}
	if opts.DryRun {
		plan, err := runner.Plan(ctx, ro)
		if err != nil {
			return err
		}
		for _, w := range plan.Warnings {
			slog.Warn(w)
		}
		return printPlan(io, plan, opts.Output)
	}
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	ro.Progress = pp.Func()
	timeline.Mark("manifest loaded")
	res, err := runner.Run(ctx, ro)
	timeline.Mark("run returned")
	if res != nil {
		slog.Info("node finished", "outcome", res.Status.Outcome, "status", res.NodeDir+"/status.json")
		if opts.Output == "json" {
			if jerr := writeJSON(io.Out(), res.Status); jerr != nil && err == nil {
				err = jerr
			}
			return err
		}
		for _, b := range res.Status.Benchmarks {
			fmt.Fprintf(io.Out(), "%s\t%s\t%s\t%.1fs\n", res.Node.NodeName(), b.Name, b.Outcome, b.DurationSeconds)
		}
	}
	return err
}

func printPlan(io iostreams.Streams, p *runner.PlanResult, format string) error {
	if format == "json" {
		return writeJSON(io.Out(), p)
	}
	n := p.Node
	fmt.Fprintf(io.Out(), "node:    rank %d of %d on %s (%s), job %s attempt %d\nmaster:  %s:%d\njob dir: %s\n",
		n.Rank, n.World, n.Host, n.Source, n.JobID, n.Attempt, n.MasterAddr, n.MasterPort, p.JobDir)
	for _, img := range p.Images {
		fmt.Fprintf(io.Out(), "image:   %s\n", img.Ref)
		if img.Dockerfile != "" && len(p.Images) > 1 {
			fmt.Fprintf(io.Out(), "  from:  %s\n", img.Dockerfile)
		}
		if img.Key != "" {
			fmt.Fprintf(io.Out(), "  key:   %s\n", img.Key)
		}
		fmt.Fprintf(io.Out(), "  state: %s\n", img.State)
		if img.Distribution != "" {
			fmt.Fprintf(io.Out(), "  nodes: %s\n", img.Distribution)
		}
		fmt.Fprintf(io.Out(), "  runs:  %s\n", strings.Join(img.Benchmarks, ", "))
	}
	for _, g := range p.GPUs {
		fmt.Fprintf(io.Out(), "gpus:    %s\n", g)
	}
	for _, sk := range p.Skipped {
		fmt.Fprintf(io.Out(), "skipped: %s\n", sk)
	}
	for _, t := range p.Tools {
		fmt.Fprintf(io.Out(), "tool:    %s\n", t)
	}
	for _, w := range p.Workspaces {
		fmt.Fprintf(io.Out(), "workspace: %s\n", w)
	}
	for _, c := range p.Containers {
		fmt.Fprintf(io.Out(), "\n%s\n", c)
	}
	if x := p.Experiment; x != nil {
		printExperimentPlan(io, n, x)
	}
	return nil
}

// printExperimentPlan is the dry run's experiment: the variants (this node's containers in
// those it runs) and the order of the trials.
func printExperimentPlan(io iostreams.Streams, n runner.Node, x *runner.PlanExperiment) {
	seed := ""
	if x.Seed != nil {
		seed = fmt.Sprintf(", seed %d", *x.Seed)
	}
	fmt.Fprintf(io.Out(), "experiment: %d variants × (%d warmup + %d measured) trials, order %s%s\n", len(x.Variants), x.Warmup, x.Repeat, x.Order, seed)
	for i, v := range x.Variants {
		id := v.ID
		if id == "" {
			id = "(no parameters)"
		}
		fmt.Fprintf(io.Out(), "\nvariant %d: %s on %d node(s)\n", i+1, id, v.Nodes)
		if len(v.Containers) == 0 {
			fmt.Fprintf(io.Out(), "  rank %d waits (it runs no container in this variant)\n", n.Rank)
		}
		for _, c := range v.Containers {
			fmt.Fprintf(io.Out(), "%s\n", c)
		}
	}
	fmt.Fprintf(io.Out(), "\ntrials (in order):\n")
	for _, t := range x.Trials {
		w := ""
		if t.Warmup {
			w = " (warmup)"
		}
		fmt.Fprintf(io.Out(), "  %d. variant %d trial %d%s\n", t.Seq, t.Variant+1, t.N, w)
	}
}
