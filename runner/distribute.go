package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// How images reach the other nodes: the manifest's distribution, and for auto rank 0's
// choice per image (chooseVia), which the "image" release carries to every node.

// mode is the manifest's distribution ("" is auto).
func (r *nodeRun) mode() string {
	if d := r.o.Manifest.Distribution; d != "" {
		return d
	}
	return manifest.DistributionAuto
}

// canStream says whether this job can stream images: rank 0 needs every node's address,
// which Slurm's node list gives.
func (r *nodeRun) canStream() bool { return r.node.Source == jobdir.SourceSlurm }

// mayStream says whether rank 0 may stream an image of this job (distribution stream, or
// auto where it can): then what the cache lacks is published while it streams, not before.
func (r *nodeRun) mayStream() bool {
	switch r.mode() {
	case manifest.DistributionStream:
		return true
	case manifest.DistributionAuto:
		return r.canStream()
	}
	return false
}

// chooseVia is rank 0's choice of how each image reaches the other nodes:
//   - cache: every node loads it from the shared cache (registry: every node pulls it);
//   - stream: rank 0 streams it along the ranks;
//   - auto: an image.ref that was on rank 0's engine already goes as with cache (each node
//     uses its own copy, or pulls it); an image the cache lacks is streamed (and written to
//     the cache as it streams, for the next job); a cached one is loaded from the cache
//     when every node sees the same shared directory, else streamed.
func (r *nodeRun) chooseVia(ctx context.Context, list []resolvedImage) error {
	mode := r.mode()
	auto := mode == manifest.DistributionAuto && r.canStream()
	// Every worker has arrived (and so made its node folder) before this release. Every
	// job of several nodes has the phase, whatever its distribution, so that a node whose
	// manifest says otherwise is not left waiting at another phase.
	if err := r.phase(ctx, "joined", nil); err != nil {
		return err
	}
	shared, why := true, ""
	askedShared := false
	for i := range list {
		img := &list[i]
		switch {
		case mode == manifest.DistributionStream:
			img.Via = viaStream
		case mode == manifest.DistributionRegistry, img.Key == "":
			img.Via = viaRef
		case !auto:
			img.Via = viaCache
		case img.publish != nil:
			img.Via = viaStream
			r.log.Info("distribution auto: streaming the image, as the cache does not have it", "image", img.Ref)
		default:
			if !askedShared {
				shared, why = r.sharedWithAll(ctx)
				askedShared = true
			}
			if shared {
				img.Via = viaCache
				r.log.Info("distribution auto: every node loads the image from the shared cache", "image", img.Ref, "key", image.ShortKey(img.Key))
			} else {
				img.Via = viaStream
				r.log.Info("distribution auto: streaming the image, as the shared directory is not shared by every node", "image", img.Ref, "why", why)
			}
		}
	}
	return nil
}

// sharedWithAll says whether every node sees rank 0's job folder (and so its shared
// directory): every rank made its node folder there before it joined the job channel, so
// where the folder is shared rank 0 sees them all. A network filesystem may show a new
// folder a little late: rank 0 looks again for up to sharedLookAgain.
func (r *nodeRun) sharedWithAll(ctx context.Context) (bool, string) {
	deadline := time.Now().Add(sharedLookAgain)
	for {
		var missing []string
		for rank := 1; rank < r.node.World; rank++ {
			nd := r.dir.Node(rank, r.node.Hosts[rank])
			if _, err := os.Stat(nd.Path); errors.Is(err, os.ErrNotExist) {
				missing = append(missing, fmt.Sprintf("%d (%s)", rank, r.node.Hosts[rank]))
			}
		}
		if len(missing) == 0 {
			return true, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if len(missing) > 5 {
				missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
			}
			return false, fmt.Sprintf("rank 0 does not see the node folders of ranks %s in %s", strings.Join(missing, ", "), r.dir.Nodes())
		}
		os.ReadDir(r.dir.Nodes()) // a fresh listing refreshes an NFS client's view of the folder
		time.Sleep(250 * time.Millisecond)
	}
}

// sharedLookAgain is how long rank 0 keeps looking for the other nodes' folders.
var sharedLookAgain = 3 * time.Second
