package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// resolvedImage is an image every node runs, and the benchmarks that run on it.
type resolvedImage struct {
	Ref string `json:"ref,omitempty"`
	ID  string `json:"id"`
	Key string `json:"key,omitempty"`
	// Digest is an image.ref's registry digest on rank 0 (repo@sha256:...): what the other
	// nodes pull with distribution: registry, so that all run the same content.
	Digest string `json:"digest,omitempty"`
	// Via is how the other nodes get it (viaCache, viaStream, viaRef): rank 0 decides.
	Via string `json:"via,omitempty"`

	use          manifest.ImageUse   // rank 0: which image of the manifest, for job.json
	buildSeconds float64             // rank 0 only: how long the image's build took, when known
	publish      *image.LeaderResult // rank 0 only: the cache lacks it; publish it while streaming it
}

// How the other nodes get an image (resolvedImage.Via).
const (
	viaCache  = "cache"  // loaded from the shared cache by its key (Ensure)
	viaStream = "stream" // received from rank 0 along the chain of ranks
	viaRef    = "ref"    // the engine's own copy of the image.ref, else pulled by rank 0's digest
	// viaPresent (rank 0 only, for job.json): to be streamed, but every node had it.
	viaPresent = "present"
)

// runRef is what containers are created from: the image id, which every node has checked
// (a tag may be missing, or name another image, on this engine: an image loaded from the
// cache or pulled by digest), else the ref.
func (img resolvedImage) runRef() string {
	if img.ID != "" {
		return img.ID
	}
	return img.Ref
}

// maxReleaseImages bounds the images of one job: rank 0 releases them all in one job-channel
// message (64 KiB), one value of at most 1 KiB each (a job-channel value is cut at 4 KiB).
// message (64 KiB), about 200 bytes each.
const maxReleaseImages = 60

// jobImages is the images of a job, in the order the benchmarks first use them.
type jobImages struct {
	list []resolvedImage
	of   map[string]int // benchmark name -> index in list
}

func (j *jobImages) forBenchmark(name string) resolvedImage { return j.list[j.of[name]] }

// newJobImages indexes list by the benchmarks of uses (list[i] is uses[i]'s image).
func newJobImages(uses []manifest.ImageUse, list []resolvedImage) *jobImages {
	j := &jobImages{list: list, of: map[string]int{}}
	for i, u := range uses {
		for _, b := range u.Benchmarks {
			j.of[b] = i
		}
	}
	return j
}

// images gets every image of the job onto this node's engine: rank 0 ensures each (building
// what the cache lacks), then releases the others with each image's id and key; workers
// ensure each from the cache. A second barrier phase ("ready") keeps every node from
// starting before all have them all.
func (r *nodeRun) images(ctx context.Context, eng Engine) (*jobImages, error) {
	end := r.st.phase(jobdir.PhaseImage)
	uses := r.o.Manifest.Images(r.benches)
	if len(uses) > maxReleaseImages {
		err := &ContextError{"benchmarks", fmt.Sprintf("the selected benchmarks run on %d images; one job runs at most %d (select fewer models, or share Dockerfiles)", len(uses), maxReleaseImages)}
		end(err)
		r.fail(err, exitcode.Invalid)
		return nil, err
	}
	list := make([]resolvedImage, len(uses))
	if r.node.Rank == 0 {
		for i, use := range uses {
			if len(uses) > 1 {
				r.log.Info(fmt.Sprintf("image %d of %d", i+1, len(uses)), "image", use.Image.String(), "benchmarks", strings.Join(use.Benchmarks, ","))
			}
			img, err := r.leaderImage(ctx, eng, use, len(uses))
			if err != nil {
				if len(uses) > 1 {
					err = fmt.Errorf("image %s (benchmarks %s): %w", use.Image, strings.Join(use.Benchmarks, ", "), err)
				}
				end(err)
				code := exitcode.Failure
				var be *image.BuildError
				if errors.As(err, &be) {
					code = exitcode.Build
				}
				r.fail(err, code)
				return nil, err
			}
			list[i] = img
		}
		if r.leader != nil {
			if err := r.chooseVia(ctx, list); err != nil {
				end(err)
				return nil, err
			}
		}
		if err := r.writeJob(list); err != nil {
			r.log.Warn("could not update job.json", "err", err)
		}
		if r.leader != nil {
			data, err := releaseData(list)
			if err == nil {
				err = r.leader.Release(r.barrierCtx(ctx), "image", data)
			}
			if err != nil {
				r.leader.Abort(err.Error(), exitcode.Failure)
				end(err)
				return nil, err
			}
			need, err := r.leaderStreams(ctx, list)
			if err != nil { // the job channel's verdict, or a barrier timeout
				if _, aborted := r.leader.Aborted(); !aborted {
					r.leader.Abort(err.Error(), exitcode.Failure)
				}
				end(err)
				return nil, err
			}
			if err := r.sendImages(ctx, eng, list, need); err != nil {
				end(err)
				r.fail(err, exitcode.Failure)
				return nil, err
			}
		}
	} else {
		if _, err := r.worker.Wait(r.barrierCtx(ctx), "joined"); err != nil { // see chooseVia
			end(err)
			return nil, err
		}
		data, err := r.worker.Wait(r.barrierCtx(ctx), "image")
		if err != nil {
			end(err)
			return nil, err
		}
		if list, err = releasedImages(data, len(uses)); err != nil {
			end(err)
			r.fail(err, exitcode.Failure)
			return nil, err
		}
		need, err := r.workerStreams(ctx, eng, list)
		if err != nil { // workerStreams reports its own failure; a verdict is the job's
			end(err)
			return nil, err
		}
		for i, img := range list {
			var err error
			switch {
			case img.Via == viaStream && need[i]:
				err = r.receiveImage(ctx, eng, i, img)
			case img.Via == viaStream:
				r.log.Info("image already present on this node's engine", "id", img.ID)
			default:
				err = r.workerImage(ctx, eng, img, uses[i].Image)
			}
			if err != nil {
				if len(uses) > 1 {
					err = fmt.Errorf("image %s (benchmarks %s): %w", uses[i].Image, strings.Join(uses[i].Benchmarks, ", "), err)
				}
				end(err)
				r.fail(err, exitcode.Failure)
				return nil, err
			}
		}
	}
	r.st.update(func(s *Status) { s.ImageID, s.ImageKey = list[0].ID, list[0].Key })
	if err := r.phase(ctx, "ready", nil); err != nil {
		end(err)
		return nil, err
	}
	end(nil)
	return newJobImages(uses, list), nil
}

// releaseData is the "image" release: one value per image (a job-channel value is at most
// 4 KiB, a whole message 64 KiB), and their count.
func releaseData(list []resolvedImage) (map[string]string, error) {
	data := map[string]string{"images": strconv.Itoa(len(list))}
	for i, img := range list {
		b, err := json.Marshal(img)
		if err != nil {
			return nil, err
		}
		if len(b) > 1<<10 {
			return nil, fmt.Errorf("image %s: its reference is too long to release (%d bytes)", img.Ref, len(b))
		}
		data["image."+strconv.Itoa(i)] = string(b)
	}
	return data, nil
}

// releasedImages reads the "image" release: want images, as this node's manifest has.
func releasedImages(data map[string]string, want int) ([]resolvedImage, error) {
	n, err := strconv.Atoi(data["images"])
	if err != nil || n != want {
		return nil, fmt.Errorf("rank 0 released %q images for %d of this node's (is every node running the same manifest and benchctl?)", data["images"], want)
	}
	list := make([]resolvedImage, n)
	for i := range list {
		if err := json.Unmarshal([]byte(data["image."+strconv.Itoa(i)]), &list[i]); err != nil || list[i].ID == "" {
			return nil, fmt.Errorf("rank 0's release of image %d cannot be read (is every node running the same benchctl?): %v", i, err)
		}
	}
	return list, nil
}

// leaderImage is rank 0's policy for one image of the job (image.Leader), with the build
// record that pins it, if run was given one.
func (r *nodeRun) leaderImage(ctx context.Context, eng Engine, use manifest.ImageUse, images int) (resolvedImage, error) {
	m := r.o.Manifest.WithImage(use.Image)
	o := image.LeaderOptions{Engine: eng, Manifest: m, Progress: r.o.Progress, Version: r.o.Version,
		Note: func(msg string, args ...any) { r.log.Info(msg, args...) }, Distribute: r.node.World > 1 && !r.o.Manifest.PullsEverywhere(),
		DeferPublish: r.node.World > 1 && r.mayStream(),
		Credentials: func(ctx context.Context, ref string) (*image.Credentials, error) {
			return registryCredentials(ctx, use.Image, r.o.Lookup)
		}}
	if use.Image.Builds() && len(r.o.Records) > 0 {
		rec, err := image.RecordFor(r.o.Records, use.Image, images, use.Benchmarks)
		if err != nil {
			return resolvedImage{}, &ContextError{"--record", err.Error()}
		}
		o.Record = rec
	}
	if use.Image.Builds() || o.Distribute {
		cache, err := image.OpenCache(r.o.SharedDir)
		if err != nil {
			return resolvedImage{}, err
		}
		o.Cache = cache
	}
	res, err := image.Leader(ctx, o)
	if err != nil {
		return resolvedImage{}, err
	}
	if res.Key != "" && !res.Published {
		r.logEnsure(res.Ensure)
	}
	if res.Pulled {
		r.log.Info("image pulled", "ref", res.Ref, "digest", res.Digest)
	}
	img := resolvedImage{Ref: res.Ref, ID: res.ID, Key: res.Key, use: use, buildSeconds: res.BuildSeconds, Digest: res.Digest}
	if res.Unpublished {
		img.publish = &res
	}
	return img, nil
}

// registryCredentials are the credentials for pulling img: its pullSecret's value, else
// the docker CLI's for the ref's registry (none: an anonymous pull).
func registryCredentials(ctx context.Context, img manifest.Image, lookup func(string) (string, bool)) (*image.Credentials, error) {
	if img.PullSecret != "" {
		v, ok := lookup(img.PullSecret)
		if !ok {
			return nil, &SecretUnsetError{Manifest: "image.pullSecret", Name: img.PullSecret}
		}
		return image.CredentialsFromSecret(img.PullSecret, v)
	}
	host, err := image.RegistryOf(img.Ref)
	if err != nil {
		return nil, err
	}
	return image.LookupCredentials(ctx, host, lookup)
}

func (r *nodeRun) workerImage(ctx context.Context, eng Engine, img resolvedImage, spec manifest.Image) error {
	if img.Key == "" {
		return r.refHere(ctx, eng, img, spec)
	}
	cache, err := image.OpenCache(r.o.SharedDir)
	if err != nil {
		return err
	}
	res, err := image.Ensure(ctx, eng, cache, img.Key, r.o.Progress)
	if errors.Is(err, image.ErrNotCached) {
		return fmt.Errorf("image %s is not in the cache %s on this node (is the shared directory the same on every node?)", image.ShortKey(img.Key), cache.Dir)
	}
	if err != nil {
		return err
	}
	if res.ImageID != img.ID {
		return fmt.Errorf("loaded image %s, but rank 0 runs %s", res.ImageID, img.ID)
	}
	r.logEnsure(res)
	return nil
}

// refHere is a worker's image.ref that does not come from the cache (distribution:
// registry, or an image rank 0 already had): this engine's own copy when it has the image
// id, else pulled from its registry by rank 0's digest (the same content, even if the tag
// has moved since), unless image.pull is never.
func (r *nodeRun) refHere(ctx context.Context, eng Engine, img resolvedImage, spec manifest.Image) error {
	if _, err := eng.ImageInspect(ctx, img.ID); err == nil {
		r.log.Info("image already present on this node's engine", "id", img.ID)
		return nil
	}
	if spec.Pull == image.PullNever {
		if id, err := inspectRef(ctx, eng, img.Ref); err != nil {
			return err
		} else {
			return fmt.Errorf("image %s is %s on this node but %s on rank 0, and image.pull is never: load the same image on every node", img.Ref, id, img.ID)
		}
	}
	ref := img.Ref
	if img.Digest != "" {
		ref = img.Digest
	}
	creds, err := registryCredentials(ctx, spec, r.o.Lookup)
	if err != nil {
		return err
	}
	why := "this node's engine lacks it"
	if r.o.Manifest.PullsEverywhere() {
		why = "distribution: registry"
	}
	r.log.Info("pulling the image", "ref", ref, "why", why)
	if err := image.Pull(ctx, eng, ref, creds, r.o.Progress); err != nil {
		return err
	}
	res, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		return fmt.Errorf("image %s is not on this node's engine after the pull: %w", ref, err)
	}
	if res.ID != img.ID {
		return fmt.Errorf("pulled %s as %s, but rank 0 runs %s (did the tag move? pin it by digest)", ref, res.ID, img.ID)
	}
	return nil
}

func (r *nodeRun) logEnsure(res image.EnsureResult) {
	if res.Loaded {
		r.log.Info("image loaded from the cache", "key", image.ShortKey(res.Key), "bytes", res.Bytes, "seconds", fmt.Sprintf("%.1f", res.Duration.Seconds()))
	} else {
		r.log.Info("image already present on this node's engine", "id", res.ImageID)
	}
}

func inspectRef(ctx context.Context, eng Engine, ref string) (string, error) {
	res, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("image %s is not on this node's engine (%s): load or pull it on every node, or build it with image.dockerfile: %w", ref, image.EngineHostOf(eng), err)
	}
	return res.ID, nil
}

// jobImage is img as job.json records it: with where it came from.
func (r *nodeRun) jobImage(img resolvedImage, withBenchmarks bool) jobdir.JobImage {
	ji := jobdir.JobImage{ID: img.ID, Key: img.Key, Tag: img.Ref, Base: img.use.Image.Ref, BuildSeconds: img.buildSeconds,
		Dockerfile: img.use.Image.Dockerfile, Digest: img.Digest, Distribution: img.Via}
	if img.use.Image.Builds() {
		p := image.ProvenanceOf(image.InputFromManifest(r.o.Manifest.WithImage(img.use.Image)))
		ji.Base, ji.GitCommit = p.Base, p.GitCommit
	}
	if withBenchmarks {
		ji.Benchmarks = img.use.Benchmarks
	}
	return ji
}
