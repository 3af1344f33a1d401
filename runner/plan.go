package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// PlanResult is what `benchctl run --dry-run` shows: nothing is created, loaded or run.
type PlanResult struct {
	Node       Node     `json:"node"`
	JobDir     string   `json:"jobDir"`
	ImageRef   string   `json:"imageRef"`
	ImageKey   string   `json:"imageKey,omitempty"`
	ImageState string   `json:"imageState"`
	GPUs       []string `json:"gpus,omitempty"`
	Containers []string `json:"containers"`        // docker-run equivalents, secrets and credential-like values as ***
	Skipped    []string `json:"skipped,omitempty"` // MAD models skip_gpu_arch skips on this node, and why
}

// Plan works out what Run would do on this node without changing anything.
func Plan(ctx context.Context, o Options) (*PlanResult, error) {
	node, err := DetectNode(o.Lookup)
	if err != nil {
		return nil, err
	}
	if _, _, err := envSecret(o.Lookup); err != nil {
		return nil, err // what the run would refuse, the dry run refuses too
	}
	benches, err := SelectBenchmarks(o.Manifest, o.Benchmarks)
	if err != nil {
		return nil, err
	}
	gpus, err := SelectGPUs(o.Manifest.GPU, o.Lookup)
	if err != nil {
		return nil, err
	}
	p := &PlanResult{Node: node, JobDir: node.Dir(o.SharedDir).Path, GPUs: gpus.Describe()}
	m := o.Manifest
	switch {
	case !m.Image.Builds():
		p.ImageRef, p.ImageState = m.Image.Ref, "used as it is (image.ref): every node's engine must have it"
	default:
		if o.Record != nil {
			p.ImageKey, p.ImageRef = o.Record.Key, o.Record.Tag
		} else if p.ImageKey, err = image.Key(image.InputFromManifest(m)); err != nil {
			return nil, err
		}
		if p.ImageRef == "" {
			p.ImageRef = m.Image.Tag
		}
		if p.ImageRef == "" {
			p.ImageRef = image.DefaultTag(m.Name, p.ImageKey)
		}
		p.ImageState = imageState(ctx, o, p.ImageKey)
	}
	nd := node.Dir(o.SharedDir).Node(node.Rank, node.Host)
	for _, b := range benches {
		acc, err := modelGPUs(b, gpus)
		if err != nil {
			return nil, err
		}
		if why := skipArch(b, gpus); why != "" && !o.NoSkipGPUArch {
			p.Skipped = append(p.Skipped, b.Name+": "+why)
			continue
		}
		spec := BuildSpec(m, b, node, p.ImageRef, p.ImageKey, nd.Results(b.Name), acc, o.Environ)
		for i, e := range spec.Env {
			// Whatever is named like a credential is printed as ***, a host variable that
			// passEnv copies included (the manifest marks the values it takes from one).
			if manifest.CredentialLike(e.Name) {
				spec.Env[i].Secret = true
			}
		}
		p.Containers = append(p.Containers, spec.DockerRun())
	}
	return p, nil
}

func imageState(ctx context.Context, o Options, key string) string {
	cache := &image.Cache{Dir: filepath.Join(o.SharedDir, "cache", "images")} // read only: creates nothing
	e, err := cache.Lookup(key)
	cached := ""
	switch {
	case errors.Is(err, image.ErrNotCached):
		cached = "not in the cache: rank 0 would build it from the manifest and publish it"
	case err != nil:
		cached = "cache entry unreadable: " + err.Error()
	default:
		cached = fmt.Sprintf("cached (%s, %d bytes)", e.Tar, e.Size)
	}
	if o.Engine == nil {
		return cached
	}
	eng, err := o.Engine()
	if err != nil {
		return cached + "; this node's engine: " + err.Error()
	}
	defer eng.Close()
	if e != nil {
		if _, err := eng.ImageInspect(ctx, e.ImageID); err == nil {
			return cached + "; already on this node's engine: nothing to load"
		}
		return cached + "; this node's engine lacks it: it would be loaded from the cache"
	}
	return cached
}
