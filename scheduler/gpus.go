package scheduler

import (
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest"
)

// GPUsNeeded is how many GPUs per node a job of these benchmarks needs, as a scheduler
// asks for them (sbatch --gpus-per-node, a pod's GPU resource): gpu.count, else the most
// n_gpus of the MAD models among them; 0 (ask nothing) for gpu.count all without models, a
// model that runs on all of the node's GPUs (n_gpus -1 or all), or gpu.vendor none.
func GPUsNeeded(g manifest.GPU, benches []manifest.Benchmark) int {
	if g.Vendor == manifest.VendorNone {
		return 0
	}
	if g.Count > 0 {
		return int(g.Count)
	}
	most := 0
	for _, b := range benches {
		if b.Model == nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(b.Model.NGPUs))
		if err != nil || n < 1 {
			return 0 // all of the node's GPUs (or a value the run refuses): no number to ask
		}
		most = max(most, n)
	}
	return most
}
