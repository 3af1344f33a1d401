package distribution

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

// Mode is the manifest's distribution ("" is auto).
func Mode(m *manifest.Manifest) string {
	if d := m.Distribution; d != "" {
		return d
	}
	return manifest.DistributionAuto
}

// CanStream says whether a job whose node context came from source can stream images:
// rank 0 needs every node's address, which Slurm's node list gives.
func CanStream(source string) bool { return source == jobdir.SourceSlurm }

// mayStream says whether rank 0 may stream an image of this job (distribution stream, or
// auto where it can): then what the cache lacks is published while it streams, not before.
func (o *Options) mayStream() bool {
	switch Mode(o.Manifest) {
	case manifest.DistributionStream:
		return true
	case manifest.DistributionAuto:
		return CanStream(o.Node.Source)
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
func (l *leader) chooseVia(ctx context.Context, list []Image) error {
	mode := Mode(l.Manifest)
	auto := mode == manifest.DistributionAuto && CanStream(l.Node.Source)
	// Every worker has arrived (and so made its node folder) before this release. Every
	// job of several nodes has the phase, whatever its distribution, so that a node whose
	// manifest says otherwise is not left waiting at another phase.
	if err := l.phase(ctx, "joined", nil); err != nil {
		return err
	}
	shared, why := true, ""
	askedShared := false
	for i := range list {
		img := &list[i]
		switch {
		case mode == manifest.DistributionStream:
			img.Via = ViaStream
		case mode == manifest.DistributionRegistry, img.Key == "":
			img.Via = ViaRef
		case !auto:
			img.Via = ViaCache
		case img.publish != nil:
			img.Via = ViaStream
			l.log().Info("distribution auto: streaming the image, as the cache does not have it", "image", img.Ref)
		default:
			if !askedShared {
				shared, why = l.sharedWithAll(ctx)
				askedShared = true
			}
			if shared {
				img.Via = ViaCache
				l.log().Info("distribution auto: every node loads the image from the shared cache", "image", img.Ref, "key", image.ShortKey(img.Key))
			} else {
				img.Via = ViaStream
				l.log().Info("distribution auto: streaming the image, as the shared directory is not shared by every node", "image", img.Ref, "why", why)
			}
		}
	}
	return nil
}

// sharedWithAll says whether every node sees rank 0's job folder (and so its shared
// directory): every rank made its node folder there before it joined the job channel, so
// where the folder is shared rank 0 sees them all. A network filesystem may show a new
// folder a little late: rank 0 looks again for up to sharedLookAgain.
func (l *leader) sharedWithAll(ctx context.Context) (bool, string) {
	deadline := time.Now().Add(sharedLookAgain)
	for {
		var missing []string
		for rank := 1; rank < l.Node.World; rank++ {
			nd := l.Dir.Node(rank, l.Node.Hosts[rank])
			if _, err := os.Stat(nd.Path); errors.Is(err, os.ErrNotExist) {
				missing = append(missing, fmt.Sprintf("%d (%s)", rank, l.Node.Hosts[rank]))
			}
		}
		if len(missing) == 0 {
			return true, ""
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if len(missing) > 5 {
				missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
			}
			return false, fmt.Sprintf("rank 0 does not see the node folders of ranks %s in %s", strings.Join(missing, ", "), l.Dir.Nodes())
		}
		os.ReadDir(l.Dir.Nodes()) // a fresh listing refreshes an NFS client's view of the folder
		time.Sleep(250 * time.Millisecond)
	}
}

// sharedLookAgain is how long rank 0 keeps looking for the other nodes' folders.
var sharedLookAgain = 3 * time.Second
