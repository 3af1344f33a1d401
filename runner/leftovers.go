package runner

import (
	"context"

	"github.com/benchctl/benchctl/runner/cleanup"
)

// removeLeftovers removes this node's containers of earlier attempts of the job: a
// requeued job starts clean even where the last attempt could not clean up.
func (r *nodeRun) removeLeftovers(ctx context.Context, eng cleanup.ContainerCleaner) {
	if r.node.Attempt == 0 {
		return
	}
	all, err := cleanup.JobContainers(ctx, eng, r.node.JobID)
	if err != nil {
		r.log.Warn("could not look for containers left by earlier attempts", "err", err)
		return
	}
	var old []cleanup.JobContainer
	for _, c := range all {
		if c.Attempt < r.node.Attempt {
			old = append(old, c)
		}
	}
	if len(old) == 0 {
		return
	}
	for _, c := range cleanup.RemoveContainers(ctx, eng, old, cleanup.CallTimeout) {
		if c.Error != "" {
			r.log.Warn("could not remove a container left by an earlier attempt", "container", c.Name, "attempt", c.Attempt, "err", c.Error)
			continue
		}
		r.log.Info("removed a container left by an earlier attempt of this job", "container", c.Name, "attempt", c.Attempt,
			"rank", c.Rank, "benchmark", c.Benchmark, "state", c.State)
	}
}
