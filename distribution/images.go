package distribution

import "github.com/benchctl/benchctl/manifest"

// Image is an image every node runs, and how it reaches them. Rank 0 releases the exported
// fields with JSON tags to every worker (release.go).
type Image struct {
	Ref string `json:"ref,omitempty"`
	ID  string `json:"id"`
	Key string `json:"key,omitempty"`
	// Digest is an image.ref's registry digest on rank 0 (repo@sha256:...): what the other
	// nodes pull with distribution: registry, so that all run the same content.
	Digest string `json:"digest,omitempty"`
	// Via is how the other nodes get it (ViaCache, ViaStream, ViaRef): rank 0 decides.
	Via string `json:"via,omitempty"`

	// Use is which image of the manifest, and its benchmarks (rank 0 only, for job.json).
	Use manifest.ImageUse `json:"-"`
	// BuildSeconds is how long the image's build took, when known (rank 0 only).
	BuildSeconds float64 `json:"-"`

	publish *publishLater // rank 0 only: the cache lacks it; publish it while streaming it
}

// How the other nodes get an image (Image.Via).
const (
	ViaCache  = "cache"  // loaded from the shared cache by its key (image.Ensure)
	ViaStream = "stream" // received from rank 0 along the chain of ranks
	ViaRef    = "ref"    // the engine's own copy of the image.ref, else pulled by rank 0's digest
	// ViaPresent (rank 0 only, for job.json): to be streamed, but every node had it.
	ViaPresent = "present"
)

// RunRef is what containers are created from: the image id, which every node has checked
// (a tag may be missing, or name another image, on this engine: an image loaded from the
// cache or pulled by digest), else the ref.
func (img Image) RunRef() string {
	if img.ID != "" {
		return img.ID
	}
	return img.Ref
}

// Images is the images of a job, in the order the benchmarks first use them.
type Images struct {
	list []Image
	of   map[string]int // benchmark name -> index in list
}

// For is the image benchmark runs on.
func (j *Images) For(benchmark string) Image { return j.list[j.of[benchmark]] }

// Index is the place in List of benchmark's image.
func (j *Images) Index(benchmark string) int { return j.of[benchmark] }

// List is every image of the job.
func (j *Images) List() []Image { return j.list }

// newImages indexes list by the benchmarks of uses (list[i] is uses[i]'s image).
func newImages(uses []manifest.ImageUse, list []Image) *Images {
	j := &Images{list: list, of: map[string]int{}}
	for i, u := range uses {
		for _, b := range u.Benchmarks {
			j.of[b] = i
		}
	}
	return j
}

// Named is the job's images as the manifest names them, none distributed: what the process
// runtime records of the environment its processes run in (an image.ref the user gives;
// none at all on bare metal).
func Named(uses []manifest.ImageUse) *Images {
	list := make([]Image, len(uses))
	for i, u := range uses {
		list[i] = Image{Ref: u.Image.Ref, Use: u}
	}
	return newImages(uses, list)
}
