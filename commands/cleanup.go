package commands

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/runner/cleanup"
	"github.com/benchctl/benchctl/workload/engine"
	"github.com/benchctl/benchctl/workload/engine/podmanservice"
	"github.com/benchctl/benchctl/workload/process"
)

// CleanupOptions are benchctl cleanup's flags.
type CleanupOptions struct {
	Job string
	// EpilogJob and EpilogHost are what a scheduler's epilog says (set in RunE from the
	// environment): the job and node when --job and --host are not given.
	EpilogJob, EpilogHost string
	SharedDir             string
	Host                  string
	Outcome               string
	Output                string
	Engine                string
	Runtime               string // process: the job's leftovers are process groups, found by their marker
}

// Cleanup ends what a job left on this node and records its nodes still saying running.
func Cleanup(ctx context.Context, io iostreams.Streams, opts *CleanupOptions) error {
	if opts.Job == "" {
		opts.Job = opts.EpilogJob
	}
	if err := runner.ValidJobID(opts.Job); err != nil {
		return exitcode.Usagef("give the id of a job (as SLURM_JOB_ID or BENCHCTL_JOB_ID had it)", "--job: %v", err)
	}
	host := opts.Host
	if host == "" {
		host = opts.EpilogHost
	}
	if host == "" {
		host, _ = os.Hostname()
	}
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	var rt cleanup.ContainerCleaner
	if opts.Runtime == manifest.RuntimeProcess {
		if opts.Engine != "" {
			return exitcode.Usagef("drop --engine: the process runtime uses no container engine", "--engine %s with --runtime process", opts.Engine)
		}
		prt, done, err := leftProcesses()
		if err != nil {
			return err
		}
		defer done()
		rt = prt
	} else {
		ert, done, err := engineCleaner(ctx, opts)
		if err != nil {
			return err
		}
		defer done()
		rt = ert
	}
	res, err := cleanup.Cleanup(ctx, cleanup.CleanupOptions{Job: opts.Job, SharedDir: dir, Host: host, Outcome: opts.Outcome, Engine: rt})
	if res != nil {
		if opts.Output == "json" {
			if jerr := writeJSON(io.Out(), res); jerr != nil {
				return jerr
			}
		} else {
			for _, c := range res.Removed {
				state := "removed"
				if c.Error != "" {
					state = "not removed: " + c.Error
				}
				fmt.Fprintf(io.Out(), "container\t%s\tattempt %d rank %d %s\t%s\n", c.Name, c.Attempt, c.Rank, c.Benchmark, state)
			}
			for _, p := range res.Marked {
				fmt.Fprintf(io.Out(), "status\t%s\t%s\n", p, opts.Outcome)
			}
			for _, why := range res.Skipped {
				fmt.Fprintf(io.Out(), "skipped\t%s\n", why)
			}
			if len(res.Removed) == 0 && len(res.Marked) == 0 && len(res.Skipped) == 0 {
				fmt.Fprintf(io.Out(), "nothing to clean up for job %s on %s\n", opts.Job, host)
			}
		}
	}
	if err != nil {
		return &cleanupFailed{err}
	}
	return nil
}

// cleanupFailed is a cleanup that left something behind: exit 1.
type cleanupFailed struct{ err error }

func (e *cleanupFailed) Error() string { return "cleanup incomplete: " + e.err.Error() }

func (e *cleanupFailed) Unwrap() error { return e.err }

func (e *cleanupFailed) ExitCode() int { return 1 }

// engineCleaner is the engine a job's containers are removed through: --engine's (or the
// one DOCKER_HOST names), else a Podman service cleanup starts itself where Podman is
// asked for and none answers. done closes it (and stops such a service).
func engineCleaner(ctx context.Context, opts *CleanupOptions) (cleanup.ContainerCleaner, func(), error) {
	// A Podman service that a crashed run started is ended; the run's containers outlive
	// it (conmon keeps them), so cleanup starts one of its own to reach them when none
	// answers.
	if n, err := podmanservice.EndLeft(opts.Job); err != nil {
		slog.Warn("looking for Podman services the job left", "err", err)
	} else if n > 0 {
		slog.Info("ended the Podman services a run of the job left", "job", opts.Job, "count", n)
	}
	svc, err := ownPodmanService(ctx, opts.Engine, opts.Job, -1)
	if err != nil {
		return nil, nil, err
	}
	if svc != nil {
		eng, err := image.ConnectDialing(svc.Host, svc.DialContext)
		if err != nil {
			svc.Stop()
			return nil, nil, err
		}
		return engine.New(eng), func() { eng.Close(); svc.Stop() }, nil
	}
	eng, err := image.ConnectChecked(ctx, opts.Engine)
	if err != nil {
		return nil, nil, err
	}
	return engine.New(eng), func() { eng.Close() }, nil
}

// leftProcesses is the process runtime as cleanup uses it: it finds a job's process groups
// by their marker, on this node, whoever started them, and ends them.
func leftProcesses() (cleanup.ContainerCleaner, func(), error) {
	dir, err := os.MkdirTemp("", "benchctl-cleanup-")
	if err != nil {
		return nil, nil, err
	}
	rt, err := process.New(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return rt, func() { os.RemoveAll(dir) }, nil
}
