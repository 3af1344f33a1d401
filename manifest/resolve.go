package manifest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/internal/textredact"
	"github.com/benchctl/benchctl/manifest/document"
)

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	// The default image is benchctl/<name>: the name must also be a Docker repository path
	// component (no separator at the end, no ".." or "._", at most two "_" in a row).
	imageNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`) })
	benchNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })
	targetRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })
	platformRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`) })
	userRE      = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$`)
	})
	globRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_*?\[\]!-]+$`) })
)

// Reserved are the variables benchctl sets in every container; a manifest cannot set them.
var Reserved = []string{"NODE_RANK", "NNODES", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "BENCHCTL_OUTPUT_DIR",
	"BENCHCTL_JOB_ID", "BENCHCTL_ATTEMPT", "BENCHCTL_BENCHMARK"}

// ReservedMountRoot is where benchctl mounts its own folders in the container.
const ReservedMountRoot = "/benchctl"

type resolver struct {
	p        *document.Problems
	ctx      context.Context
	dir      string
	lookup   Lookup
	catalog  CatalogFunc
	secrets  map[string]bool
	warnings []string
	more     int // warnings beyond MaxProblems, only counted
	// missing caches whether a mount source exists: every catalog model with run options
	// resolves the manifest's mounts again, and a stat each time made that models × mounts
	// stats.
	missing map[string]bool
}

func (r *resolver) warn(path, format string, args ...any) {
	if len(r.warnings) >= document.MaxProblems {
		r.more++
		return
	}
	pr := document.Problem{File: r.p.File(), Line: r.p.Line(path), Path: path}
	pr.Msg = fmt.Sprintf(format, args...)
	r.warnings = append(r.warnings, pr.String())
}

// ownVars is why a manifest cannot take benchctl's own variables.
const ownVars = "benchctl's own variables (BENCHCTL_*, among them the barrier's key BENCHCTL_JOB_SECRET)"

// ownVar reports whether a variable is one of benchctl's own (BENCHCTL_*, the bare prefix
// included): no manifest value takes one and no secret names one. Names are case-sensitive,
// as Linux's are: benchctl_job_secret is another variable, which benchctl never sets.
func ownVar(name string) bool { return strings.HasPrefix(name, "BENCHCTL_") }

// refuseOwn is the expander's vetting of every variable in a manifest field.
func refuseOwn(name string) error {
	if ownVar(name) {
		return fmt.Errorf("${%s}: %s never reach a manifest value; use a variable of your own, or read BENCHCTL_JOB_ID, BENCHCTL_ATTEMPT, BENCHCTL_BENCHMARK or BENCHCTL_OUTPUT_DIR in the benchmark, where benchctl sets them", name, ownVars)
	}
	return nil
}

// expand expands a manifest field: never from benchctl's own variables.
func (r *resolver) expand(s string) (expansion, error) {
	return expand(s, r.lookup, r.isSecret, refuseOwn)
}

// value expands a field that may not carry a secret (it would be persisted).
func (r *resolver) value(fp, s string) (string, bool) {
	e, err := r.expand(s)
	if err != nil {
		r.p.Add(fp, "%v", err)
		return "", false
	}
	if len(e.secrets) > 0 {
		r.p.Add(fp, "uses the secret ${%s}: secrets reach only the container's environment at run time, never build args, paths, tags or mounts (they would be stored in the image or the job record)", e.secrets[0])
		return "", false
	}
	for _, v := range e.vars {
		if CredentialLike(v) {
			r.warn(fp, "takes ${%s}, whose name looks like a secret: this value is stored (image, cache key, build and job records); if it is one, list %s under secrets, which reach only the container's environment at run time", v, v)
			break
		}
	}
	return e.value, true
}

// CredentialLike reports whether a variable name reads like a credential (textredact.CredentialLike).
func CredentialLike(name string) bool { return textredact.CredentialLike(name) }

func (r *resolver) isSecret(name string) bool { return r.secrets[name] }

// abs makes a host path absolute, relative to the manifest's folder.
func (r *resolver) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(r.dir, p)
}

func (r *resolver) resolve(s *Spec) *Manifest {
	m := &Manifest{}
	if s.Version != nil && *s.Version != 1 {
		r.p.Add("version", "unsupported manifest version %d (this benchctl reads version 1)", *s.Version)
	}
	// Secrets first: every later expansion must know which variables are secret.
	r.secrets = map[string]bool{}
	for i, n := range s.Secrets {
		fp := document.Index("secrets", i)
		switch {
		case !varNameRE().MatchString(n):
			r.p.Add(fp, "%s is not an environment variable name", document.Quote(n))
		case ownVar(n):
			r.p.Add(fp, "%s cannot be a secret: %s never reach a container through the manifest; remove it from secrets (a credential of your own needs a name of your own)", n, ownVars)
		case r.secrets[n]:
			r.p.Add(fp, "%s is listed twice", n)
		default:
			r.secrets[n] = true
			m.Secrets = append(m.Secrets, n)
			if _, ok := r.lookup(n); !ok {
				r.warn(fp, "%s is not set here; the container gets it only where it is set when `benchctl run` starts", n)
			}
		}
	}

	switch {
	case s.Name == "":
		r.p.Add("name", "is required (lower-case letters, digits, '.', '_', '-'; at most 63)")
	case len(s.Name) > 63 || !nameRE().MatchString(s.Name):
		r.p.Add("name", "%s is not a valid name (lower-case letters, digits, '.', '_', '-', starting with a letter or digit; at most 63)", document.Quote(s.Name))
	case !imageNameRE().MatchString(s.Name):
		r.p.Add("name", "%s cannot name an image (benchctl/<name>): end it with a letter or digit and separate words with one '.', one or two '_', or dashes, e.g. %s", document.Quote(s.Name), document.Quote(SuggestName(s.Name)))
	default:
		m.Name = s.Name
	}

	if s.Image != nil {
		m.Image = r.image("image", s.Image, s.Models != nil)
	}
	m.GPU = r.gpu(s.GPU)
	extra := r.extraOptions(s)
	m.Mounts = r.mounts(s.Mounts)
	m.Env = r.env("env", s.Env)
	for i, g := range s.PassEnv {
		fp := document.Index("passEnv", i)
		if _, err := path.Match(g, ""); err != nil || !globRE().MatchString(g) {
			r.p.Add(fp, "%s is not a variable name or glob (letters, digits, _ and the wildcards * ? [...])", document.Quote(g))
			continue
		}
		m.PassEnv = append(m.PassEnv, g)
	}
	m.Container = r.container(s.Container)
	if extra != nil {
		m.Container.SecurityOpt, m.Container.GroupAdd = extra.SecurityOpt, extra.GroupAdd
	}
	m.LogScan = r.logScan(s.LogScan)
	m.Benchmarks = r.benchmarks(s.Benchmarks)
	launcher := r.launcher(s.Launcher)
	m.Tools = r.tools(s.Tools)
	if s.Models != nil {
		m.Models = r.models(s.Models)
	}
	if len(s.Benchmarks) == 0 && s.Models == nil {
		r.p.Add("benchmarks", "is required: list at least one benchmark (name and command), or import some with models: {catalog, tags}")
	}
	if m.Models != nil && r.catalog != nil && r.p.Count() == 0 {
		imp := CatalogImport{Models: *m.Models, Vendor: m.GPU.Vendor, Image: m.Image, Context: r.ctx}
		if m.Models.GPUVendor != "" {
			imp.Vendor = m.Models.GPUVendor
		}
		bs, warns, err := r.catalog(imp)
		r.warnings = append(r.warnings, warns...)
		if err != nil {
			if e, ok := err.(*document.Error); ok {
				r.p.Merge(e)
			} else {
				r.p.Add("models.catalog", "%v", err)
			}
		}
		seen := map[string]bool{}
		for _, b := range m.Benchmarks {
			seen[b.Name] = true
		}
		for i, b := range bs {
			if i%document.CheckEvery == 0 && r.ctx.Err() != nil {
				break // Parse returns the context's cause
			}
			if seen[b.Name] {
				r.p.Add("models", "the catalog's model %s has the same name as a benchmark of the manifest (rename one)", document.Quote(b.Name))
				continue
			}
			seen[b.Name] = true
			r.modelOptions(s, m, &b)
			m.Benchmarks = append(m.Benchmarks, b)
		}
		r.catalogImageNote(m, bs)
		if err == nil && len(bs) == 0 {
			r.p.Add("models", "selects no model from %s (check models.tags and models.names; `benchctl models list --catalog %s` shows what is there)", m.Models.Catalog, m.Models.Catalog)
		}
	} else if m.Models != nil && r.catalog == nil {
		r.p.Add("models", "importing a catalog is not available here")
	}
	ranks := r.ranksPerNode("ranksPerNode", s.RanksPerNode)
	for i := range m.Benchmarks {
		b := &m.Benchmarks[i]
		if b.Launcher == "" {
			b.Launcher = launcher
		}
		if b.RanksPerNode == 0 && MPILauncher(b.Launcher) {
			b.RanksPerNode = ranks
		}
		r.mpi(m, b, i)
	}
	if ranks > 0 && !slices.ContainsFunc(m.Benchmarks, func(b Benchmark) bool { return MPILauncher(b.Launcher) }) {
		r.p.Add("ranksPerNode", "is for the MPI launchers (launcher: mpirun or mpiexec), and no benchmark has one")
	}
	switch s.Runtime {
	case "", RuntimeEngine, RuntimeProcess:
		m.Runtime = s.Runtime
	default:
		r.p.Add("runtime", "%s is not a runtime benchctl knows (allowed: engine, process)", document.Quote(s.Runtime))
	}
	if !m.Process() {
		r.everyBenchmarkHasAnImage(s, m)
	}
	m.Slurm = r.slurm(s.Slurm)
	m.Kubernetes = r.kubernetes(s.Kubernetes)
	m.Job = r.job(s.Job)
	r.distribution(s, m)
	switch s.Engine {
	case "", EngineDocker, EnginePodman:
		m.Engine = s.Engine
	default:
		r.p.Add("engine", "%s is not a container engine benchctl knows (allowed: docker, podman)", document.Quote(s.Engine))
	}
	if m.Process() {
		for _, rf := range m.ProcessRefusals() {
			r.p.Add(rf.Field, "%s", rf.Msg)
		}
	}
	r.experiment(s, m)
	m.Metrics = s.Metrics.Rules // the user's first: the first rule that matches decides
	for _, b := range m.Benchmarks {
		for _, f := range b.Figures {
			for _, metric := range slices.Sorted(maps.Keys(f.Directions())) {
				m.Metrics = append(m.Metrics, MetricRule{Metric: metric, Better: f.Directions()[metric]})
			}
		}
	}
	m.Telemetry = s.Telemetry.resolve()
	return m
}

// distribution checks how images reach the nodes: with registry, every image must be an
// image.ref that each node can pull.
func (r *resolver) distribution(s *Spec, m *Manifest) {
	switch s.Distribution {
	case "", DistributionAuto, DistributionCache, DistributionStream:
		m.Distribution = s.Distribution
		return
	case DistributionRegistry:
		m.Distribution = s.Distribution
	default:
		r.p.Add("distribution", "%s is not a way to distribute images (allowed: auto, cache, stream, registry)", document.Quote(s.Distribution))
		return
	}
	for _, use := range m.Images(m.Benchmarks) {
		if use.Image.Builds() {
			r.p.Add("distribution", "registry has every node pull its image, but %s builds %s: push it with benchctl build --push REGISTRY/NAME:TAG and give image.ref, or use distribution: cache",
				strings.Join(use.Benchmarks, ", "), use.Image.Dockerfile)
			return
		}
		if use.Image.Pull == "never" {
			r.p.Add("distribution", "registry has every node pull its image, and image.pull is never for %s", strings.Join(use.Benchmarks, ", "))
			return
		}
	}
}

// everyBenchmarkHasAnImage: a benchmark without an image of its own runs on the
// manifest's, which must then name one.
func (r *resolver) everyBenchmarkHasAnImage(s *Spec, m *Manifest) {
	if m.Image.Given() || (s.Image != nil && (s.Image.Dockerfile != "" || s.Image.Ref != "")) {
		return // given (or given wrongly, which is reported already)
	}
	var without []string
	for _, b := range m.Benchmarks {
		if b.Image == nil {
			without = append(without, b.Name)
		}
	}
	if len(without) == 0 || r.p.Has("models") || r.p.Has("models.catalog") {
		return
	}
	if len(without) > 5 {
		without = append(without[:5], fmt.Sprintf("and %d more", len(without)-5))
	}
	what := "image.dockerfile to build an image, or image.ref to use an existing one"
	if m.Models != nil {
		what += "; a catalog's models get theirs from their dockerfile when gpu.vendor is amd or nvidia"
	}
	r.p.Add("image", "is required: %s run on the manifest's image (%s)", strings.Join(without, ", "), what)
}

// catalogImageNote says, when the manifest's image: overrides the catalog's Dockerfiles,
// that it does: validate shows it, so nobody wonders why a model's Dockerfile is not built.
func (r *resolver) catalogImageNote(m *Manifest, bs []Benchmark) {
	if !m.Image.Given() {
		return
	}
	var named []string
	for _, b := range bs {
		if b.Model != nil && b.Model.Dockerfile != "" {
			named = append(named, b.Name)
		}
	}
	if len(named) == 0 {
		return
	}
	if len(named) > 5 {
		named = append(named[:5], fmt.Sprintf("and %d more", len(named)-5))
	}
	r.warn("image", "overrides the catalog's Dockerfiles: every model (%s) runs on %s; remove image: (keep buildArgs if you need them) to build each model's own Dockerfile", strings.Join(named, ", "), m.Image)
}

// image resolves an image: block at fp ("image", or "benchmarks[i].image"). defaults says
// the block may name no image (the manifest's, when the catalog gives the images): then
// only its buildArgs, target and platform are kept, for the catalog's images.
func (r *resolver) image(fp string, s *ImageSpec, defaults bool) Image {
	var im Image
	switch {
	case s.Dockerfile != "" && s.Ref != "":
		r.p.Add(fp, "give either dockerfile (build) or ref (use an existing image), not both")
		return im
	case s.Dockerfile == "" && s.Ref == "" && !defaults:
		r.p.Add(fp, "needs dockerfile (to build an image) or ref (to use an existing one)")
		return im
	case s.Ref != "":
		if v, ok := r.value(fp+".ref", s.Ref); ok {
			if err := checkReference(v, true); err != nil {
				r.p.Add(fp+".ref", "%s is not an image reference: %v", document.Quote(v), err)
			} else {
				im.Ref = v
			}
		}
		switch s.Pull {
		case "", "missing", "always", "never":
			im.Pull = s.Pull
		default:
			r.p.Add(fp+".pull", "%s is not a pull policy (allowed: missing, always, never)", document.Quote(s.Pull))
		}
		if s.PullSecret != "" {
			// A variable's name, read when pulling; its value reaches no container (unless
			// it is also listed under secrets) and is never written anywhere.
			if !envNameRE().MatchString(s.PullSecret) || ownVar(s.PullSecret) {
				r.p.Add(fp+".pullSecret", "%s is not a variable name (its value, user:password for the registry, is read when pulling)", document.Quote(s.PullSecret))
			} else {
				im.PullSecret = s.PullSecret
			}
		}
		for _, f := range []struct{ name, v string }{{"context", s.Context}, {"target", s.Target}, {"tag", s.Tag}, {"platform", s.Platform}} {
			if f.v != "" {
				r.p.Add(fp+"."+f.name, "applies only when building (%s.dockerfile); remove it, or build instead of using %s.ref", fp, fp)
			}
		}
		if len(s.BuildArgs) > 0 {
			r.p.Add(fp+".buildArgs", "applies only when building (%s.dockerfile)", fp)
		}
		return im
	case s.Dockerfile == "":
		// Settings for the catalog's images: each model's Dockerfile, built in the
		// catalog's docker/ folder, under a tag of its own.
		if s.Context != "" {
			r.p.Add(fp+".context", "applies to image.dockerfile, which is not given: the catalog's models are built in the catalog's docker/ folder")
		}
		if s.Tag != "" {
			r.p.Add(fp+".tag", "names one image, and image.dockerfile is not given: each catalog image is tagged benchctl/<name>:<key>")
		}
	}
	if s.Dockerfile != "" {
		if v, ok := r.value(fp+".dockerfile", s.Dockerfile); ok {
			im.Dockerfile = r.abs(v)
			if st, err := os.Stat(im.Dockerfile); err != nil {
				r.p.Add(fp+".dockerfile", "%s does not exist (paths are relative to the manifest's folder %s)", im.Dockerfile, r.dir)
			} else if !st.Mode().IsRegular() {
				r.p.Add(fp+".dockerfile", "%s is not a file", im.Dockerfile)
			}
		}
	}
	ctx := s.Context
	if ctx == "" && im.Dockerfile != "" {
		im.Context = filepath.Dir(im.Dockerfile)
	} else if ctx != "" && s.Dockerfile != "" {
		if v, ok := r.value(fp+".context", ctx); ok {
			im.Context = r.abs(v)
			if st, err := os.Stat(im.Context); err != nil {
				r.p.Add(fp+".context", "%s does not exist (paths are relative to the manifest's folder %s)", im.Context, r.dir)
			} else if !st.IsDir() {
				r.p.Add(fp+".context", "%s is not a directory", im.Context)
			}
		}
	}
	for _, f := range []struct{ name, v string }{{"pull", s.Pull}, {"pullSecret", s.PullSecret}} {
		if f.v != "" {
			r.p.Add(fp+"."+f.name, "applies only to an existing image (%s.ref); a built image's bases are pulled by its builder", fp)
		}
	}
	if s.Target != "" && !targetRE().MatchString(s.Target) {
		r.p.Add(fp+".target", "%s is not a build stage name", document.Quote(s.Target))
	}
	im.Target = s.Target
	if s.Platform != "" && !platformRE().MatchString(s.Platform) {
		r.p.Add(fp+".platform", "%s is not a platform (os/arch[/variant], e.g. linux/amd64)", document.Quote(s.Platform))
	}
	im.Platform = s.Platform
	for _, k := range sortedKeys(s.BuildArgs) {
		bp := fp + ".buildArgs." + k
		if !varNameRE().MatchString(k) {
			r.p.Add(bp, "%s is not a build argument name (letters, digits and _)", document.Quote(k))
			continue
		}
		if v, ok := r.value(bp, s.BuildArgs[k]); ok {
			im.BuildArgs = append(im.BuildArgs, EnvVar{Name: k, Value: v})
		}
	}
	if s.Tag != "" && s.Dockerfile != "" {
		if v, ok := r.value(fp+".tag", s.Tag); ok {
			if err := checkReference(v, false); err != nil {
				r.p.Add(fp+".tag", "%s is not an image tag: %v", document.Quote(v), err)
			} else {
				im.Tag = v
			}
		}
	}
	return im
}

func (r *resolver) gpu(s GPUSpec) GPU {
	g := GPU{Vendor: VendorAuto, Count: Count(s.Count.N)}
	switch s.Vendor {
	case "":
	case VendorAuto, VendorAMD, VendorNVIDIA, VendorNone:
		g.Vendor = s.Vendor
	default:
		msg := ""
		if sg := document.Suggest(s.Vendor, []string{VendorAMD, VendorNVIDIA, VendorNone, VendorAuto}); sg != "" {
			msg = ", did you mean " + document.Quote(sg) + "?"
		}
		r.p.Add("gpu.vendor", "%s is not a GPU vendor%s (allowed: amd, nvidia, none, auto)", document.Quote(s.Vendor), msg)
	}
	if g.Vendor == VendorNone && s.Count.Set && s.Count.N != 0 {
		r.p.Add("gpu.count", "asks for %d GPUs but gpu.vendor is none", s.Count.N)
	}
	return g
}

func (r *resolver) env(base string, in map[string]string) []EnvVar {
	var out []EnvVar
	for _, k := range sortedKeys(in) {
		fp := document.Join(base, k)
		if !varNameRE().MatchString(k) {
			r.p.Add(fp, "%s is not an environment variable name (letters, digits and _, not starting with a digit)", document.Quote(k))
			continue
		}
		if isReserved(k) {
			r.p.Add(fp, "is set by benchctl on every node (reserved: %s)", strings.Join(Reserved, ", "))
			continue
		}
		if r.secrets[k] {
			r.p.Add(fp, "%s is listed under secrets: it is passed from the host at run time; remove it here", k)
			continue
		}
		e, err := r.expand(in[k])
		if err != nil {
			r.p.Add(fp, "%v", err)
			continue
		}
		secret := len(e.secrets) > 0
		for _, v := range e.vars {
			if !secret && CredentialLike(v) {
				// Not listed under secrets, perhaps by mistake: the container still gets the
				// value, but nothing that prints or stores the manifest shows it.
				secret = true
				r.warn(fp, "takes ${%s}, whose name looks like a secret, so the value is shown as *** wherever benchctl prints or stores it (job.json, validate, the dry run); list %s under secrets to say it is one, or give the variable a name that does not look like a credential", v, v)
			}
		}
		out = append(out, EnvVar{Name: k, Value: e.value, Secret: secret})
	}
	return out
}

func isReserved(k string) bool {
	for _, v := range Reserved {
		if v == k {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
