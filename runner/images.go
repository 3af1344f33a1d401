package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/benchctl/benchctl/image/digestmemo"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobchan"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// The job channel's ends are the image phase's barriers.
var (
	_ distribution.LeaderBarrier = (*jobchan.Leader)(nil)
	_ distribution.WorkerBarrier = (*jobchan.Worker)(nil)
	_ distribution.Reporter      = imageReport{}
)

// images is this node's image phase (package distribution): every image of the job onto
// this node's engine, rank 0 leading, every node ready before any container starts.
func (r *nodeRun) images(ctx context.Context, eng Engine) (*distribution.Images, error) {
	end := r.st.Phase(jobdir.PhaseImage)
	digests := r.digests()
	o := distribution.Options{Manifest: r.o.Manifest, Benchmarks: r.benches, Dir: r.dir, SharedDir: r.o.SharedDir,
		Records: r.o.Records, Version: r.o.Version, Progress: r.o.Progress, BarrierTimeout: r.o.BarrierTimeout, Digests: digests,
		Secret: r.secret, Log: r.log,
		Node: distribution.Node{JobID: r.node.JobID, Attempt: r.node.Attempt, Rank: r.node.Rank, World: r.node.World,
			Hosts: r.node.Hosts, Source: r.node.Source, StreamPorts: r.node.StreamPorts()},
		Credentials: func(ctx context.Context, img manifest.Image) (*image.Credentials, error) {
			return registryCredentials(ctx, img, r.o.Lookup)
		}}
	var imgs *distribution.Images
	var err error
	if r.node.Rank == 0 {
		// The MAD models' urls, cloned once for the job before any node is released to
		// run: the other nodes copy the clones, and never reach the network for them.
		if err := r.cloneModels(ctx); err != nil {
			r.fail(err, exitcode.Of(err))
			end(err)
			return nil, err
		}
		var b distribution.LeaderBarrier // none in a job of one node
		if r.leader != nil {
			b = r.leader
		}
		imgs, err = distribution.Lead(ctx, o, eng, b, imageReport{r})
		if digests != nil {
			r.bg.Go(func() {
				if err := digests.Save(); err != nil {
					r.log.Debug("the build contexts' digests were not kept for the next run", "err", err)
				}
			})
		}
	} else {
		imgs, err = distribution.Follow(ctx, o, eng, r.worker, imageReport{r})
	}
	end(err)
	return imgs, err
}

// digests are the build contexts' files' digests kept between this user's runs (rank 0,
// which alone computes the images' keys, and a manifest that builds one): saved beside the
// critical path once the image phase has used them.
func (r *nodeRun) digests() *digestmemo.Memo {
	if r.node.Rank != 0 || !slices.ContainsFunc(r.o.Manifest.Images(r.benches), func(u manifest.ImageUse) bool { return u.Image.Builds() }) {
		return nil
	}
	return digestmemo.Open(digestmemo.Default())
}

// cloneModels clones each url of the job's MAD models into the job folder (rank 0), once
// per url, and records each commit in the model (job.json, perf.csv's git_commit).
func (r *nodeRun) cloneModels(ctx context.Context) error {
	done := map[string]string{}
	for _, b := range r.benches {
		if b.Model == nil || b.Model.URL == "" {
			continue
		}
		commit, ok := done[b.Model.URL]
		if !ok {
			start := time.Now()
			r.log.Info("cloning the model's url once for the job", "benchmark", b.Name, "url", manifest.RedactURL(b.Model.URL))
			var err error
			if commit, err = r.o.catalog().Clone(ctx, r.dir.Clones(), b); err != nil {
				return err
			}
			r.log.Info("cloned", "benchmark", b.Name, "commit", commit, "seconds", fmt.Sprintf("%.1f", time.Since(start).Seconds()))
			done[b.Model.URL] = commit
		}
		b.Model.Commit = commit
	}
	return nil
}

// imageReport is what the image phase tells this node's run: failures go to the job
// channel, the images to status.json and (rank 0) job.json.
type imageReport struct{ r *nodeRun }

// Fail tells the other nodes that this one failed.
func (p imageReport) Fail(err error, code int) { p.r.fail(err, code) }

// JobImages records the job's images in job.json.
func (p imageReport) JobImages(list []distribution.Image) {
	if err := p.r.writeJob(list); err != nil {
		p.r.log.Warn("could not update job.json", "err", err)
	}
}

// NodeImages records this node's (first) image in status.json.
func (p imageReport) NodeImages(list []distribution.Image) {
	if len(list) == 0 {
		return
	}
	p.r.st.Update(func(s *Status) { s.ImageID, s.ImageKey = list[0].ID, list[0].Key })
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

// jobImage is img as job.json records it: with where it came from.
func (r *nodeRun) jobImage(img distribution.Image, withBenchmarks bool) jobdir.JobImage {
	ji := jobdir.JobImage{ID: img.ID, Key: img.Key, Tag: img.Ref, Base: img.Use.Image.Ref, BuildSeconds: img.BuildSeconds,
		Dockerfile: img.Use.Image.Dockerfile, Digest: img.Digest, Distribution: img.Via}
	if img.Use.Image.Builds() {
		p := image.ProvenanceOf(image.InputFromManifest(r.o.Manifest.WithImage(img.Use.Image)))
		ji.Base, ji.GitCommit = p.Base, p.GitCommit
	}
	if withBenchmarks {
		ji.Benchmarks = img.Use.Benchmarks
	}
	return ji
}
