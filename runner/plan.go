package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/runner/jobsecret"
	"github.com/benchctl/benchctl/runner/launch"
	"github.com/benchctl/benchctl/runner/remote"

	"github.com/benchctl/benchctl/runner/workspace"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// PlanResult is what `benchctl run --dry-run` shows: nothing is created, loaded or run.
type PlanResult struct {
	Node       Node        `json:"node"`
	JobDir     string      `json:"jobDir"`
	Images     []PlanImage `json:"images"` // which benchmark runs on which image
	GPUs       []string    `json:"gpus,omitempty"`
	Containers []string    `json:"containers"`        // docker-run equivalents, secrets and credential-like values as ***
	Skipped    []string    `json:"skipped,omitempty"` // MAD models skip_gpu_arch skips on this node, and why
	// Workspaces say, for each MAD model, the node's own workspace its container sees at
	// /myworkspace and the folder of the checkout copied into its run directory.
	Workspaces []string `json:"workspaces,omitempty"`
	// Warnings are what the dry run could not plan as the run would, and how it planned
	// instead (a node without the manifest's GPUs: the GPUs the manifest asks for).
	Warnings []string `json:"warnings,omitempty"`
	// Experiment is the manifest's variants and the order of their trials; Containers are
	// then empty and each variant this node runs lists its own.
	Experiment *PlanExperiment `json:"experiment,omitempty"`
	// Tools are the tools every benchmark runs under, one line each: its file and line, its
	// cmd, scripts and variables as they will run (PlanTools).
	Tools []string `json:"tools,omitempty"`
}

// PlanExperiment is an experiment's plan as the dry run shows it.
type PlanExperiment struct {
	Order  string `json:"order"`
	Seed   *int64 `json:"seed,omitempty"` // a shuffle's
	Repeat int    `json:"repeat"`
	Warmup int    `json:"warmup"`
	// Variants are the experiment's variants, in the matrix's order.
	Variants []PlanVariant `json:"variants"`
	// Trials are the trials in the order the job runs them.
	Trials []manifest.Trial `json:"trials"`
}

// PlanVariant is one variant: its parameters, its nodes, and this node's containers in it.
type PlanVariant struct {
	ID     string           `json:"id"`
	Params []manifest.Param `json:"params"`
	Nodes  int              `json:"nodes"` // ranks 0..nodes-1
	// Containers are this node's docker-run equivalents in the variant; none when the
	// variant does not use this node.
	Containers []string `json:"containers"`
}

// PlanImage is one image of the job and the benchmarks that would run on it.
type PlanImage struct {
	Ref        string `json:"ref"`
	Key        string `json:"key,omitempty"`
	Dockerfile string `json:"dockerfile,omitempty"`
	State      string `json:"state"`
	// Distribution says how the other nodes would get it (a job of several nodes only).
	Distribution string   `json:"distribution,omitempty"`
	Benchmarks   []string `json:"benchmarks"`
}

// Plan works out what Run would do on this node without changing anything.
func Plan(ctx context.Context, o Options) (*PlanResult, error) {
	node, err := o.node()
	if err != nil {
		return nil, err
	}
	if _, _, err := jobsecret.Env(o.Lookup); err != nil {
		return nil, err // what the run would refuse, the dry run refuses too
	}
	benches, err := SelectBenchmarks(o.Manifest, o.Benchmarks)
	if err != nil {
		return nil, err
	}
	p := &PlanResult{Node: node, JobDir: node.Dir(o.SharedDir).Path, Tools: PlanTools(o.Manifest.ToolDefs)}
	gpus, err := SelectGPUs(o.Manifest.GPU, o.Lookup, o.SysfsRoot)
	var gerr *GPUError
	switch {
	case errors.As(err, &gerr) && gerr.Absent:
		// A login node plans for the GPU nodes: the GPUs the manifest asks for, said once. A
		// node that has GPUs the request does not fit is refused as the run would refuse it.
		var warn string
		g := o.Manifest.GPU
		if gpus.Vendor == gpu.VendorAMD || gpus.Vendor == gpu.VendorNVIDIA {
			g.Vendor = gpus.Vendor // gpu.vendor auto on a node with too few: this node's vendor
		}
		if gpus, p.GPUs, warn, err = plannedGPUs(g, benches, gerr); err != nil {
			return nil, err
		}
		p.Warnings = append(p.Warnings, warn)
	case err != nil:
		return nil, err
	default:
		p.GPUs = gpus.Describe()
	}
	forEngine, err := planEngineGPUs(ctx, o, &gpus, p)
	if o.Manifest.Process() { // no engine: the GPUs by their visibility variables
		gpus = gpus.ForProcess()
		forEngine, err = func(a GPUAccess, _ manifest.Benchmark) (GPUAccess, error) { return a.ForProcess(), nil }, nil
	}
	if err != nil {
		return nil, err
	}
	m := o.Manifest
	uses := m.Images(benches)
	imageOf := map[string]int{}
	for i, use := range uses {
		pi, err := planImage(ctx, o, use, len(uses))
		if err != nil {
			return nil, err
		}
		if node.World > 1 {
			pi.Distribution = planDistribution(distribution.Mode(m), distribution.CanStream(node.Source), use.Image.Builds(), strings.HasPrefix(pi.State, "cached"))
		}
		p.Images = append(p.Images, pi)
		for _, b := range use.Benchmarks {
			imageOf[b] = i
		}
	}
	nd := node.Dir(o.SharedDir).Node(node.Rank, node.Host)
	containers := func(benches []manifest.Benchmark, node Node, skipped *[]string, tr *trialRun) ([]string, error) {
		var out []string
		for _, b := range benches {
			acc, err := modelGPUs(b, gpus)
			if err != nil {
				return nil, err
			}
			if acc, err = forEngine(acc, b); err != nil {
				return nil, err
			}
			if err := checkLauncher(b, node, acc, m.Experiment); err != nil {
				return nil, err
			}
			if why := skipArch(b, gpus); why != "" && !o.NoSkipGPUArch {
				if skipped != nil {
					*skipped = append(*skipped, b.Name+": "+why)
				}
				continue
			}
			img := p.Images[imageOf[b.Name]]
			results := nd.Results(b.Name)
			if tr != nil {
				results = nd.Results(jobdir.TrialRunName(b.Name, tr.t.Seq))
			}
			dirs := RunDirs{Results: results}
			if m.Process() {
				dirs.Output = results
			}
			if workspace.In(b) {
				run := b.Name
				if tr != nil {
					run = jobdir.TrialRunName(b.Name, tr.t.Seq)
				}
				dirs.Workspace = nd.Workspace(run)
				if tr == nil || tr.t.Seq == 0 {
					p.Workspaces = append(p.Workspaces, planWorkspace(b, dirs.Workspace))
				}
			}
			spec := BuildSpecAt(m, b, node, img.Ref, img.Key, dirs, acc, o.Environ)
			if tr != nil {
				spec = withTrial(spec, tr.v, tr.t)
			}
			if manifest.MPILauncher(b.Launcher) { // rank 0's line; the other nodes wait for its ranks
				agent := remote.AgentPath(m.Process(), filepath.Join(os.TempDir(), "benchctl-agent-XXXXXX"))
				if line, err := launch.MPILine(b.Launcher, launchOf(b, node, acc), b.RanksPerNode, agent, !m.Process(), spec.Command); err == nil {
					spec.Command, spec.Env = line.Argv, launch.WithEnv(spec.Env, line.Env)
				}
			}
			for i, e := range spec.Env {
				// Whatever is named like a credential is printed as ***, a host variable that
				// passEnv copies included (the manifest marks the values it takes from one).
				if manifest.CredentialLike(e.Name) {
					spec.Env[i].Secret = true
				}
			}
			if m.Process() {
				out = append(out, processPaths(spec, results).CommandLine())
				continue
			}
			out = append(out, spec.DockerRun())
		}
		return out, nil
	}
	x := m.Experiment
	if x == nil {
		if p.Containers, err = containers(benches, node, &p.Skipped, nil); err != nil {
			return nil, err
		}
		return p, nil
	}
	if err := CheckExperimentFits(x, node.World); err != nil {
		return nil, err
	}
	pe := &PlanExperiment{Order: x.Order, Repeat: x.Repeat, Warmup: x.Warmup}
	seed := x.PlanSeed(node.JobID)
	if x.Order == manifest.OrderShuffle {
		pe.Seed = &seed
	}
	skipped := &p.Skipped // skip_gpu_arch is the same in every variant: said once
	pe.Trials = x.Plan(seed)
	first := make([]manifest.Trial, len(x.Variants)) // each variant's first trial, as its containers are shown
	for _, t := range slices.Backward(pe.Trials) {
		first[t.Variant] = t
	}
	for vi, v := range x.Variants {
		pv := PlanVariant{ID: v.ID, Params: v.Params, Nodes: v.Nodes}
		if pv.Nodes == 0 {
			pv.Nodes = node.World
		}
		if runsIn(v, node.Rank) {
			if pv.Containers, err = containers(variantBenchmarks(v, benches), variantNode(node, v.Nodes), skipped, &trialRun{t: first[vi], v: v}); err != nil {
				return nil, err
			}
			skipped = nil
		}
		pe.Variants = append(pe.Variants, pv)
	}
	p.Experiment = pe
	return p, nil
}

// variantBenchmarks are the selected benchmarks as the variant runs them (its parameters
// substituted).
func variantBenchmarks(v manifest.Variant, selected []manifest.Benchmark) []manifest.Benchmark {
	byName := make(map[string]manifest.Benchmark, len(v.Benchmarks))
	for _, b := range v.Benchmarks {
		byName[b.Name] = b
	}
	out := make([]manifest.Benchmark, 0, len(selected))
	for _, b := range selected {
		if vb, ok := byName[b.Name]; ok {
			b = vb
		}
		out = append(out, b)
	}
	return out
}

// planImage is what rank 0 would run for one image of the job: its tag and key (the build
// record's, when run was given one), and whether the cache and this engine have it.
func planImage(ctx context.Context, o Options, use manifest.ImageUse, images int) (PlanImage, error) {
	pi := PlanImage{Dockerfile: use.Image.Dockerfile, Benchmarks: use.Benchmarks}
	if o.Manifest.Process() {
		pi.Ref, pi.State = use.Image.Ref, "none: runtime process runs on the node's own environment (an image.ref is recorded as its name)"
		return pi, nil
	}
	if !use.Image.Builds() {
		pi.Ref, pi.State = use.Image.Ref, "used as it is (image.ref): every node's engine must have it"
		return pi, nil
	}
	m := o.Manifest.WithImage(use.Image)
	if len(o.Records) > 0 {
		rec, err := image.RecordFor(o.Records, use.Image, images, use.Benchmarks)
		if err != nil {
			return pi, &ContextError{"--record", err.Error()}
		}
		pi.Key, pi.Ref = rec.Key, rec.Tag
	} else {
		var err error
		if pi.Key, err = image.Key(image.InputFromManifest(m)); err != nil {
			return pi, err
		}
	}
	if pi.Ref == "" {
		pi.Ref = m.Image.Tag
	}
	if pi.Ref == "" {
		pi.Ref = image.DefaultTag(m.Name, pi.Key)
	}
	pi.State = imageState(ctx, o, pi.Key)
	return pi, nil
}

// planDistribution is how the other nodes would get an image (distribution.Lead decides it for real).
func planDistribution(mode string, canStream, builds, cached bool) string {
	switch {
	case mode == manifest.DistributionRegistry:
		return "registry: every node pulls it from its registry, by the digest rank 0 resolves"
	case mode == manifest.DistributionStream:
		return "stream: rank 0 streams it to the other nodes along the chain of ranks"
	case !builds && (mode == manifest.DistributionCache || !canStream):
		return mode + ": if rank 0 has to pull it, the others load it from the shared cache; else each node uses its own copy, or pulls it"
	case !builds:
		return "auto: if rank 0 has to pull it, it streams it to the others (and writes it to the cache); else each node uses its own copy, or pulls it"
	case mode == manifest.DistributionCache:
		return "cache: the other nodes load it from the shared cache"
	case !canStream:
		return "auto, without Slurm's node list to stream along: the other nodes load it from the shared cache"
	case cached:
		return "auto: the other nodes load it from the shared cache if every node sees the same shared directory, else rank 0 streams it"
	}
	return "auto: rank 0 streams it to the other nodes as it saves it (writing the cache entry from the same save)"
}

func imageState(ctx context.Context, o Options, key string) string {
	cache := image.CacheLayout{Shared: o.SharedDir}.Cache() // read only: creates nothing
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

// planWorkspace says where a MAD model runs: its workspace, the checkout it reads, and its
// run directory's copy.
func planWorkspace(b manifest.Benchmark, ws string) string {
	line := fmt.Sprintf("%s: %s at %s (the checkout %s read-only through links to %s)", b.Name, ws, manifest.ModelWorkspace, workspace.CheckoutOf(b), workspace.CheckoutMount)
	if b.Model.RunDir != "" {
		line += fmt.Sprintf("; runs in %s/%s, a copy of %s", manifest.ModelWorkspace, manifest.ModelRunDirectory, b.Model.RunDir)
	}
	return line
}
