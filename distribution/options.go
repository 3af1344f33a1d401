package distribution

import (
	"context"
	"log/slog"
	"time"

	"github.com/benchctl/benchctl/image/digestmemo"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// Options are what the image phase of one node needs of the job.
type Options struct {
	Manifest   *manifest.Manifest
	Benchmarks []manifest.Benchmark // the ones to run: their images are the job's
	Node       Node
	Dir        jobdir.Dir // the job folder: rank 0 sees there whether it is shared (auto)
	SharedDir  string     // holds the image cache
	Records    []*image.Record
	// Digests, when set, keeps the build contexts' files' digests between runs: rank 0's
	// key of a built image reads only the files changed since (image.KeyUsing).
	Digests *digestmemo.Memo
	// Credentials are the registry credentials for pulling img (nil: an anonymous pull).
	Credentials func(ctx context.Context, img manifest.Image) (*image.Credentials, error)
	Version     string // benchctl's, for the cache metadata
	Progress    image.ProgressFunc
	// BarrierTimeout bounds every wait at the job channel and each image's stream
	// (0: an hour).
	BarrierTimeout time.Duration
	Secret         []byte // the job channel's secret, which signs the image stream too
	Log            *slog.Logger
}

// Node is this node's place in the job.
type Node struct {
	JobID   string
	Attempt int
	Rank    int
	World   int
	Hosts   []string
	// Source is where the node context came from: under Slurm (jobdir.SourceSlurm) every
	// node's address is known, so rank 0 may stream images along the ranks.
	Source      string
	StreamPorts []int // the image stream's port range
}

// LeaderBarrier is what rank 0 asks of the job channel in the image phase (*jobchan.Leader).
type LeaderBarrier interface {
	// Release lets every worker past phase, with data, once all arrived.
	Release(ctx context.Context, phase string, data map[string]string) error
	// Gather waits for every worker at phase and returns what they sent.
	Gather(ctx context.Context, phase string) (map[string]string, error)
	// Abort ends the job with reason and an exit code every rank hears.
	Abort(reason string, code int)
	// Aborted says whether the job was aborted, and why.
	Aborted() (string, bool)
}

// WorkerBarrier is what a worker asks of the job channel in the image phase (*jobchan.Worker).
type WorkerBarrier interface {
	// Wait arrives at phase and returns rank 0's release data.
	Wait(ctx context.Context, phase string) (map[string]string, error)
	// WaitWith is Wait, telling rank 0 data on arrival.
	WaitWith(ctx context.Context, phase string, data map[string]string) (map[string]string, error)
}

// Reporter is told what the image phase did, for the job folder and the job channel.
type Reporter interface {
	// Fail tells the job that this node failed, with the exit code the job is to end with
	// (rank 0 aborts the job, a worker reports to rank 0). A failure of the job channel
	// itself is not reported: the channel has its verdict already.
	Fail(err error, code int)
	// JobImages is rank 0's: the job's images and how each reaches the nodes (job.json).
	// It is called again when that changes.
	JobImages(list []Image)
	// NodeImages says that this node's engine has every image of the job (status.json),
	// before the "ready" phase.
	NodeImages(list []Image)
}

// InputError is bad input to the image phase: a manifest or flag that cannot work (exit 4).
type InputError struct{ Var, Msg string }

func (e *InputError) Error() string { return e.Var + ": " + e.Msg }

// InvalidInput marks the error as bad input.
func (e *InputError) InvalidInput() bool { return true }

// timeout bounds a wait at the job channel, and one image's stream.
func (o *Options) timeout() time.Duration {
	if d := o.BarrierTimeout; d > 0 {
		return d
	}
	return time.Hour
}

// barrierCtx bounds one wait at the job channel (rank 0 may be building).
func (o *Options) barrierCtx(ctx context.Context) context.Context {
	c, cancel := context.WithTimeout(ctx, o.timeout())
	go func() { <-c.Done(); cancel() }()
	return c
}

func (o *Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}
