package commands

import (
	"context"
	"log/slog"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest/document"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// schedulers are the batch systems benchctl knows, in the order they are detected: local,
// which claims every environment, last. A new scheduler is one line here. Kubernetes asks
// the cluster of the kubeconfig as kubectl finds it.
func schedulers() []scheduler.Scheduler { return schedulersOn(kubernetes.Cluster{}) }

// schedulersOn is schedulers with Kubernetes asking cluster (--kubeconfig, --namespace).
func schedulersOn(cluster kubernetes.Cluster) []scheduler.Scheduler {
	return []scheduler.Scheduler{slurm.Scheduler{}, kubernetes.Scheduler{Cluster: &cluster}, local.Scheduler{}}
}

// CancelOptions are benchctl cancel's flags.
type CancelOptions struct {
	Job     string
	Cluster kubernetes.Cluster
}

// Cancel ends a job, asking the scheduler whose id it is (a Slurm job id: scancel; a
// Kubernetes one: its Job deleted).
func Cancel(ctx context.Context, io iostreams.Streams, opts *CancelOptions) error {
	for _, s := range schedulersOn(opts.Cluster) {
		c, ok := s.(scheduler.Canceller)
		if !ok {
			continue
		}
		mine, err := c.Cancel(ctx, opts.Job)
		if !mine {
			continue
		}
		if err != nil {
			return err
		}
		slog.Info("cancelled", "job", opts.Job, "scheduler", s.Name())
		return nil
	}
	return exitcode.Usagef("give the id benchctl submit printed (a Slurm job id, or k8s-... for Kubernetes)", "%s is not a job id of Slurm or Kubernetes", document.Quote(opts.Job))
}

// detectNode is this task's node context, from the first scheduler whose job this is.
func detectNode(lookup scheduler.Lookup) (scheduler.Node, error) {
	return scheduler.DetectNode(lookup, schedulers()...)
}

// EpilogNode is the job and node of the scheduler's epilog this process runs in (Slurm's:
// SLURM_JOB_ID, SLURMD_NODENAME), which cleanup uses when --job and --host are not given.
func EpilogNode(lookup scheduler.Lookup) (job, host string, ok bool) {
	return scheduler.EpilogNode(lookup, schedulers()...)
}
