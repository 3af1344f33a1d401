package commands

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/runner/cleanup"
	"github.com/benchctl/benchctl/workload/engine"
	"github.com/benchctl/benchctl/workload/engine/podmanservice"
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
		return err
	}
	var rt engine.Runtime
	if svc != nil {
		defer svc.Stop()
		eng, err := image.ConnectHost(svc.Host)
		if err != nil {
			return err
		}
		defer eng.Close()
		rt = engine.New(eng)
	} else {
		eng, err := image.ConnectChecked(ctx, opts.Engine)
		if err != nil {
			return err
		}
		defer eng.Close()
		rt = engine.New(eng)
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
