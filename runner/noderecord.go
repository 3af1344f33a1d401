package runner

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/benchctl/benchctl/gpu"

	"github.com/benchctl/benchctl/runner/noderecord"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/jobdir"
)

// recordGathering is the reading of what this node is: started once (start), read from out.
type recordGathering struct {
	start func()
	out   chan *jobdir.NodeRecord
}

// gatherNodeRecord makes the reading of what this node is; writeNodeRecord starts it if it
// has not started, and waits for it. It starts at once where it may take long (the GPU
// library and srun can take seconds: with GPUs, it runs while the image phase does, and must
// not delay this node's first container after the others'), or where now says; else when
// node.json is written, beside the first container (the engine's /version and /info would
// slow its create and start).
func (r *nodeRun) gatherNodeRecord(ctx context.Context, gpus *nodeGPUs, now bool) *recordGathering {
	s := noderecord.Sources{Lookup: r.o.Lookup, HostRoot: noderecord.HostRoot(r.o.Lookup, r.node.Rank), SysfsRoot: r.o.SysfsRoot,
		Vendor: gpus.Vendor, Version: r.o.Version}
	if r.engine.Kind != "" {
		id := r.engine
		s.Identity = &id
	}
	s.Engine = r.facts // asked once for the node: the identity and the GPUs' way read them too
	if s.HostRoot != "" {
		r.log.Warn("node record: the machine's facts are read under a recorded tree ("+noderecord.TestHostRootVar+", a test hook)", "root", s.HostRoot)
	}
	g := &recordGathering{out: make(chan *jobdir.NodeRecord, 1)}
	g.start = sync.OnceFunc(func() { go func() { g.out <- noderecord.Gather(ctx, s) }() })
	if now || (gpus.Vendor != gpu.VendorNone && gpus.Vendor != "") {
		g.start()
	}
	return g
}

// writeNodeRecord writes this node's node.json: what it is (gathered), with the images it is
// about to run; imgs nil (the image phase failed: imgErr) writes the record without them,
// saying why, since a node whose image did not arrive is the one most worth comparing.
// Failing to gather a fact or to write the file never fails the job: a warning says so. The
// wait for the gathering is bounded (noderecord.Gather's own bound, a library that ignores it,
// the run's end, and a failing node's cleanup budget).
func (r *nodeRun) writeNodeRecord(ctx context.Context, eng Engine, g *recordGathering, imgs *distribution.Images, imgErr error) {
	g.start()
	wait, done := noderecord.Timeout+2*time.Second, ctx.Done()
	if imgs == nil {
		wait, done = 3*time.Second, nil // failing: a short wait whatever ctx says
	}
	var rec *jobdir.NodeRecord
	select {
	case rec = <-g.out:
	case <-done:
		r.log.Warn("node record: the run ended before this node's facts were read; no node.json")
		return
	case <-time.After(wait):
		r.log.Warn("node record: reading this node's facts did not end in time (a GPU library or srun that does not answer); no node.json", "waited", wait.String())
		return
	}
	rec.Job, rec.Attempt, rec.Rank, rec.Host, rec.Placement = r.node.JobID, r.node.Attempt, r.node.Rank, r.node.Host, r.node.Placement
	switch {
	case imgs == nil:
		rec.Unavailable["images"] = "the image phase failed: " + cmp.Or(fmt.Sprint(imgErr), "unknown")
	case eng == nil:
		rec.Unavailable["images"] = "the process runtime runs no image: its processes run in the node's own environment (job.json's image.ref, when given, names it)"
	default:
		r.recordImages(ctx, eng, rec, imgs)
	}
	if err := r.nf.WriteNodeRecord(rec); err != nil {
		r.log.Warn("could not write the node record", "file", r.nd.NodeRecord(), "err", err)
	}
}

// recordImages adds the node's images to rec: each with the benchmarks that run it, a name
// the same on every node, the id in this node's engine, and rank 0's registry digest where
// there is one (the same on every node; a repo digest of this engine's could name another
// repository or mirror on each node), else this engine's.
func (r *nodeRun) recordImages(ctx context.Context, eng Engine, rec *jobdir.NodeRecord, imgs *distribution.Images) {
	for i, img := range imgs.List() {
		ir := jobdir.ImageRecord{ID: img.ID, Digest: img.Digest}
		for _, b := range r.benches {
			if imgs.Index(b.Name) == i {
				ir.Benchmarks = append(ir.Benchmarks, b.Name)
			}
		}
		// The same name on every node, whatever id its engine gave the image: its first
		// benchmark's (the job's images are in the manifest's order on every node).
		ir.Name = cmp.Or(img.Key, img.ID)
		if n := len(ir.Benchmarks); n > 0 {
			ir.Name = "of " + ir.Benchmarks[0]
			if n > 1 {
				ir.Name += fmt.Sprintf(" and %d more", n-1)
			}
		}
		if res, err := eng.ImageInspect(ctx, img.ID); err != nil {
			rec.Unavailable["images"] = fmt.Sprintf("inspecting %s: %v", img.ID, err)
		} else {
			ir.ID = res.ID
			if ir.Digest == "" && len(res.RepoDigests) > 0 {
				ir.Digest = res.RepoDigests[0]
			}
		}
		rec.Images = append(rec.Images, ir)
	}
}
