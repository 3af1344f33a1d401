package models

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/shellwords"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// Select returns the models that carry any of tags (a tag may also be a model's name, as in
// madengine; "all" selects every model) or are named in names, in catalog order. A name that
// is not in the catalog is an error; a tag that selects nothing is a warning.
func (c *Catalog) Select(tags, names []string) ([]Model, []string, error) {
	var warnings []string
	have := make(map[string]bool, len(c.Models))
	for _, m := range c.Models {
		have[m.Name] = true
	}
	want := map[string]bool{}
	for _, n := range names {
		if !have[n] {
			return nil, warnings, fmt.Errorf("model %s is not in %s", document.Quote(n), c.Path)
		}
		want[n] = true
	}
	all := false
	tagSet := map[string]bool{}
	for _, t := range tags {
		if t == "all" {
			all = true
		}
		tagSet[t] = true
	}
	used := map[string]bool{}
	var out []Model
	type scoped struct{ tag, scope, filter string }
	var scopes []scoped          // <dir>/<tag>: the models of scripts/<dir> (madengine's scoped tags)
	alias := map[string]string{} // <dir>/<x> for a <dir>:<x> tag given (colonScoped)
	for _, t := range tags {
		if s, f, ok := scopedTag(t); ok {
			scopes = append(scopes, scoped{t, s, f})
		} else if a, ok := c.colonScoped(t); ok {
			s, f, _ := scopedTag(a)
			scopes = append(scopes, scoped{t, s, f})
			alias[a] = t
			tagSet[a] = true
		}
	}
	for _, m := range c.Models {
		pick := all || want[m.Name]
		if tagSet[m.Name] {
			pick, used[m.Name] = true, true
			if t, ok := alias[m.Name]; ok {
				used[t] = true
			}
		}
		for _, t := range m.Tags {
			if tagSet[t] {
				pick, used[t] = true, true
			}
		}
		for _, s := range scopes {
			if m.Scope == s.scope && (s.filter == "all" || slices.Contains(m.Tags, s.filter)) {
				pick, used[s.tag] = true, true
			}
		}
		if pick {
			out = append(out, m)
		}
	}
	var known string // the catalog's tags, for the warnings: at most 50 named
	for _, t := range tags {
		if t != "all" && !used[t] {
			if known == "" {
				known = listSome(c.AllTags(), 50)
			}
			warnings = append(warnings, fmt.Sprintf("%s: tag %s selects no model (tags in the catalog: %s)%s", c.Path, document.Quote(t), known, c.colonHint(t)))
		}
	}
	return out, warnings, nil
}

// colonScoped reads a tag <dir>:<x> as <dir>/<x> when <dir> is a scripts folder of the
// checkout and <x> names a model or a tag there, or is "all" (the form `--tags
// echo_model:echo_infer`). madengine reads what follows a ':' as extra args
// (`<model>:batch-size=32`), which always has a '='; such a tag, or one whose <dir> is no
// scripts folder, is not read this way.
func (c *Catalog) colonScoped(t string) (string, bool) {
	scope, rest, ok := strings.Cut(t, ":")
	if !ok || scope == "" || rest == "" || strings.ContainsAny(scope, "/") || strings.ContainsAny(rest, "=:/") {
		return "", false
	}
	for _, m := range c.Models {
		if m.Scope == scope && (rest == "all" || m.Name == scope+"/"+rest || slices.Contains(m.Tags, rest)) {
			return scope + "/" + rest, true
		}
	}
	return "", false
}

// colonHint explains a tag with a ':' that selects nothing: madengine's extra args
// (<model>:<key>=<value>), which benchctl does not take, or a <dir>:<x> whose scripts
// folder has no model or tag <x> (listing the folder's models).
func (c *Catalog) colonHint(t string) string {
	scope, rest, ok := strings.Cut(t, ":")
	if !ok {
		return ""
	}
	if strings.Contains(rest, "=") {
		return "; what follows ':' is madengine's extra args (<model>:<key>=<value>), which benchctl does not take: give them in the model's args in models.json"
	}
	var there []string
	for _, m := range c.Models {
		if m.Scope == scope {
			there = append(there, m.Name)
		}
	}
	if len(there) == 0 {
		return ""
	}
	if len(there) > 10 {
		there = append(there[:10], fmt.Sprintf("and %d more", len(there)-10))
	}
	return fmt.Sprintf("; scripts/%s has no model or tag %s (its models: %s)", scope, document.Quote(rest), strings.Join(there, ", "))
}

// Command turns the model's scripts and args into an exec-form command, the way madengine
// runs them in the model's run directory (Form): `bash run.sh`, `bash <file>.sh`,
// `python3 <file>.py`, or a program of the image (an absolute path) directly. args are
// split like a shell would split words, with quotes, but nothing is expanded: there is no
// shell.
func (m Model) Command() ([]string, error) {
	args, err := shellwords.Split(m.Args)
	if err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	f, err := Form(m.Scripts)
	if err != nil {
		return nil, err
	}
	return append(f.Command, args...), nil
}

// Benchmark converts a catalog model into a manifest benchmark.
func (m Model) Benchmark(catalog string) (manifest.Benchmark, error) {
	cmd, err := m.Command()
	if err != nil {
		return manifest.Benchmark{}, err
	}
	form, _ := Form(m.Scripts) // Command checked it
	workdir := Workspace       // as madengine runs its containers (--workdir /myworkspace/)
	switch {
	case m.URL != "": // madengine's model directory: the folder its git clone makes
		workdir = path.Join(Workspace, manifest.CloneName(m.URL))
	case form.Dir != "":
		workdir = path.Join(Workspace, RunDirectory) // madengine's cd <model_dir>
	}
	b := manifest.Benchmark{
		Name:    BenchmarkName(m.Name),
		Command: cmd,
		Workdir: workdir,
		Timeout: manifest.Duration(manifest.DefaultTimeout),
		Results: m.MultipleResults,
		Tags:    m.Tags,
		// madengine's distributed.launcher: its MAD_MULTI_NODE_RUNNER and variables.
		Launcher: m.Launcher,
		// madengine's per-model switch for the log error scan.
		NoLogScan: m.NoLogScan, LogErrors: m.LogErrors, LogBenign: m.LogBenign,
		Model: &manifest.Model{
			File: m.File, Data: m.Data, RunDir: form.Dir,
			Catalog: catalog, Line: m.Line, URL: m.URL, Cred: m.Cred, Dockerfile: m.Dockerfile, Scripts: m.Scripts,
			Args: m.Args, NGPUs: m.NGPUs, Owner: m.Owner, TrainingPrecision: m.TrainingPrecision,
			MultipleResults: m.MultipleResults, SkipGPUArch: m.SkipGPUArch, Extra: m.Extra, RunOptions: m.RunOptions,
			Distributed: m.Distributed,
		},
	}
	if m.Timeout > 0 {
		b.Timeout = manifest.Duration(time.Duration(m.Timeout) * time.Second)
	}
	if b.Name != m.Name {
		b.Model.Name = m.Name
	}
	return b, nil
}

// Importer is the manifest.CatalogFunc that imports `models:` from a catalog. Unless the
// manifest's image: names one, each model gets its own image: its dockerfile prefix
// resolved by the GPU vendor (ResolveDockerfile), built in the catalog's docker/ folder
// with the manifest's build args, as madengine builds it.
func Importer(sel manifest.CatalogImport) ([]manifest.Benchmark, []string, error) {
	return importWith(sel, Discovery{})
}

// ImporterWith is Importer with a checkout's discovery settings (Discovery).
func ImporterWith(d Discovery) manifest.CatalogFunc {
	return func(sel manifest.CatalogImport) ([]manifest.Benchmark, []string, error) { return importWith(sel, d) }
}

func importWith(sel manifest.CatalogImport, d Discovery) ([]manifest.Benchmark, []string, error) {
	ctx := sel.Context
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := LoadCheckoutCatalog(ctx, sel.Catalog, d)
	if err != nil {
		return nil, nil, err
	}
	warnings := c.Warnings
	picked, w, err := c.Select(sel.Tags, sel.Names)
	warnings = append(warnings, w...)
	if err != nil {
		return nil, warnings, err
	}
	var out []manifest.Benchmark
	problems := &document.Error{File: c.Path, Kind: "catalog"}
	shell := 0 // models whose args hold shell characters
	type imageResult struct {
		img *manifest.Image
		err error
	}
	images := map[string]imageResult{} // by dockerfile prefix
	var data *dataFile                 // the checkout's data.json, read when a model names data
	type folderCheck struct {
		warning string
		err     error
	}
	folders := map[string]folderCheck{} // each script folder is checked once
	for i, m := range picked {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, warnings, fmt.Errorf("importing from %s: %w", c.Path, context.Cause(ctx))
		}
		b, err := m.Benchmark(c.Path)
		if err != nil {
			problems.Add(document.Problem{File: fileOf(c, m), Line: m.Line, Path: m.Name, Msg: err.Error()})
			continue
		}
		if f, _ := Form(m.Scripts); f.Dir != "" {
			key := f.Dir + "\x00" + strings.Join(f.Command, " ")
			fc, done := folders[key]
			if !done {
				fc.warning, fc.err = CheckScripts(ctx, c.Dir(), m)
				folders[key] = fc
			}
			if fc.err != nil {
				problems.Add(document.Problem{File: fileOf(c, m), Line: m.Line, Path: m.Name + ".scripts", Msg: fc.err.Error()})
				continue
			}
			if fc.warning != "" {
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s: %s", fileOf(c, m), m.Line, m.Name, fc.warning))
			}
		}
		if !sel.Image.Given() {
			r, done := images[m.Dockerfile]
			if !done { // models share Dockerfiles: each is looked for and read once
				r.img, r.err = c.image(m, sel)
				images[m.Dockerfile] = r
			}
			img, err := r.img, r.err
			if img != nil {
				cp := *img // each benchmark its own
				img = &cp
			}
			if err != nil {
				problems.Add(document.Problem{File: fileOf(c, m), Line: m.Line, Path: m.Name + ".dockerfile", Msg: err.Error()})
				continue
			}
			b.Image = img
		}
		b.Model.GuestOS = guestOS(sel.GuestOS, b.Image)
		if m.Data != "" {
			if data == nil {
				data = newDataFile(c.Dir())
			}
			ds, err := data.dataSets(m.Data)
			if errors.Is(err, errNoDataFile) { // madengine runs the model without its data, too
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s: data %s is not mounted: the checkout has no %s to say where it is (madengine runs it without its data too)", fileOf(c, m), m.Line, m.Name, document.Quote(m.Data), DataFile))
				err = nil
			}
			if err != nil {
				problems.Add(document.Problem{File: fileOf(c, m), Line: m.Line, Path: m.Name + ".data", Msg: err.Error()})
				continue
			}
			b.Model.DataSets = ds
			for _, d := range ds {
				if d.Provider == "" {
					warnings = append(warnings, fmt.Sprintf("%s:%d: %s: data %s has no provider in %s (no local, custom, minio, nas or aws entry): the model runs without a data mount, as madengine runs it", fileOf(c, m), m.Line, m.Name, document.Quote(d.Name), data.path))
				}
			}
		}
		if strings.ContainsAny(m.Args, "$`;|&<>") {
			if shell++; shell <= document.MaxProblems {
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s: args %s contain shell characters; benchctl runs no shell, so they are passed literally", fileOf(c, m), m.Line, m.Name, document.Quote(m.Args)))
			}
		}
		out = append(out, b)
	}
	if shell > document.MaxProblems {
		warnings = append(warnings, fmt.Sprintf("%s: … and %d more models whose args contain shell characters", c.Path, shell-document.MaxProblems))
	}
	if len(problems.Problems) > 0 {
		return nil, warnings, problems
	}
	return out, warnings, nil
}

// listSome joins the first n of list, and says how many there are when it leaves some out.
func listSome(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s, … (%d in all)", strings.Join(list[:n], ", "), len(list))
}

// image is a model's own image: its Dockerfile for the job's GPU vendor, built in the
// catalog's docker/ folder (madengine builds ./docker) or, for a Dockerfile outside it, in
// the Dockerfile's folder. A model without a dockerfile gets none (the manifest must give
// one).
func (c *Catalog) image(m Model, sel manifest.CatalogImport) (*manifest.Image, error) {
	if m.Dockerfile == "" {
		return nil, nil
	}
	vendor := strings.ToLower(sel.Vendor)
	if vendor != manifest.VendorAMD && vendor != manifest.VendorNVIDIA {
		return nil, fmt.Errorf("the model's image is its dockerfile %s picked by GPU vendor, and gpu.vendor is %s: set gpu.vendor (or models.gpuVendor, which picks only the Dockerfiles) to amd or nvidia (madengine's gpu_vendor), or give image: to run every model on one image", m.Dockerfile, orNone(sel.Vendor))
	}
	df, err := ResolveDockerfile(c.Dir(), m.Name, m.Dockerfile, vendor, sel.GuestOS)
	if err != nil {
		var de *DockerfileError
		if errors.As(err, &de) { // the problem already names the model
			return nil, fmt.Errorf("dockerfile %s: %s", de.Prefix, strings.TrimPrefix(de.Error(), fmt.Sprintf("model %s: dockerfile %s: ", de.Model, de.Prefix)))
		}
		return nil, err
	}
	ctx := filepath.Join(c.Dir(), "docker")
	if rel, err := filepath.Rel(ctx, df); err != nil || strings.HasPrefix(rel, "..") {
		ctx = filepath.Dir(df)
	}
	return &manifest.Image{Dockerfile: df, Context: ctx, Target: sel.Image.Target, Platform: sel.Image.Platform, BuildArgs: sel.Image.BuildArgs}, nil
}

// LoadManifest loads a manifest with catalog import wired in: what every command uses.
func LoadManifest(file string, lookup manifest.Lookup) (*manifest.Manifest, []string, error) {
	return LoadManifestContext(context.Background(), file, lookup)
}

// LoadManifestContext is LoadManifest that stops when ctx ends (a signal), returning its
// cause.
func LoadManifestContext(ctx context.Context, file string, lookup manifest.Lookup) (*manifest.Manifest, []string, error) {
	return manifest.Load(file, manifest.Options{Lookup: lookup, Catalog: Importer, Context: ctx})
}
