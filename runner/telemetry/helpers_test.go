package telemetry

import (
	"context"
	"log/slog"

	"github.com/benchctl/benchctl/jobdir/jobdirtest"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
)

// GPUAccess is the part of runner's GPU selection that sampling reads.
type GPUAccess struct {
	Vendor string
	GPUs   []gpu.GPU
}

// nodeRun is the part of runner's node run that sampling uses: its log, its node folder and
// its sampling, as runner's sampleDuring hands them to SampleDuring.
type nodeRun struct {
	log *slog.Logger
	nf  *jobdir.NodeFolder
	nd  jobdir.NodeDir
	tel *Node
}

func (r *nodeRun) sampleDuring(ctx context.Context, run string, gpus GPUAccess) (stop func()) {
	return r.tel.SampleDuring(ctx, r.nf, r.log, run, gpus.GPUs)
}

// testNodeFolder is jobdirtest.NodeFolder.
var testNodeFolder = jobdirtest.NodeFolder
