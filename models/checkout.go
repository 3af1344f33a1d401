package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// A MAD checkout run is `benchctl run --tags T` (or build) with no --manifest, in a folder
// that holds MAD's models.json, docker/ and scripts/, with madengine's --additional-context
// keys. It stands for a manifest, which CheckoutManifest writes and resolves with the same
// code as a manifest file (manifest.Parse), so every check applies.

// Workspace is a MAD model's workspace in its container (manifest.ModelWorkspace).
const Workspace = manifest.ModelWorkspace

// CheckoutOptions is what `run` and `build` with --tags give instead of a manifest.
type CheckoutOptions struct {
	Dir         string          // the MAD checkout (the folder holding models.json); "" = "."
	Tags        []string        // --tags (each may be a comma list, as madengine accepts); required, non-empty
	Context     string          // --context: a JSON object (madengine's --additional-context), may be ""
	ContextFile string          // --context-file: a file holding that JSON object, may be "" (both given: error)
	Lookup      manifest.Lookup // for ${VAR} expansion, as manifest.Options.Lookup
	// RunGenerators lets scripts/<dir>/get_models_json.py run (GeneratorFlag): Discovery.
	RunGenerators bool
}

// CheckoutManifest resolves a MAD checkout run: the manifest
//
//	name: <the checkout folder's name, made a valid name>
//	gpu: {vendor: <gpu_vendor, lower-cased; default auto>, count: <from docker_gpus>}
//	image: {buildArgs: <docker_build_arg>}      # no dockerfile: each model's own, by vendor
//	env: <docker_env_vars>
//	mounts: [<host>:<container> for each docker_mounts entry]
//	models: {catalog: <dir>/models.json, tags: <tags>, guestOS: <guest_os>}
//
// resolved like a manifest file. Each model runs in a workspace of its node's own that the
// runner mounts at Workspace, reading the checkout through it (rundir.go). Beyond a file's, the resolved manifest's Path is the
// checkout's models.json, its Digest is of the document with credential-like values
// hidden, every docker_env_vars value whose name is credential-like (manifest.
// CredentialLike) is secret (*** in Redacted copies) and every model works in Workspace.
//
// Every error is invalid input (exit 4), a *document.Error whose problems name where:
// the flag (`--context: docker_env_vars.FOO: must be a string`, `--context-file ctx.json:
// ...`, `--tags: ...`), the catalog's file and line, or the checkout folder. Warnings are
// located the same way.
func CheckoutManifest(o CheckoutOptions) (*manifest.Manifest, []string, error) {
	var tags []string
	for _, t := range o.Tags {
		for _, w := range strings.Split(t, ",") {
			if w = strings.TrimSpace(w); w != "" {
				tags = append(tags, w)
			}
		}
	}
	if len(tags) == 0 {
		return nil, nil, inputError("--tags", "is empty: give the tags or names of the models to run (e.g. --tags vllm), or all")
	}
	ctx, err := readContext(o)
	if err != nil {
		return nil, nil, err
	}
	catalog, found, err := CheckoutCatalog(o.Dir)
	if err != nil {
		return nil, nil, inputError("--tags", "cannot resolve the folder %s: %v", o.Dir, err)
	}
	abs := filepath.Dir(catalog)
	if !found {
		return nil, nil, inputError("--tags", "no models.json in %s: run in a MAD checkout, or give --manifest", abs)
	}
	disc := Discovery{RunGenerators: o.RunGenerators}
	if err := needVendor(catalog, tags, ctx, disc); err != nil {
		return nil, nil, err
	}
	c := &checkout{dir: abs, ctx: ctx, doc: filepath.Join(abs, ".benchctl-checkout.json")}
	data, err := c.document(tags, false)
	if err != nil {
		return nil, nil, err
	}
	m, warns, err := manifest.Parse(c.doc, c.doc, data, manifest.Options{Lookup: o.Lookup, Catalog: ImporterWith(disc)})
	warns = c.warnings(warns)
	if err != nil {
		return nil, warns, c.problems(err)
	}
	shown, err := c.document(tags, true)
	if err != nil {
		return nil, warns, err
	}
	sum := sha256.Sum256(shown)
	m.Path, m.Digest = catalog, "sha256:"+hex.EncodeToString(sum[:])
	m.ToolContext = ctx.tools
	for i, e := range m.Env {
		if _, given := ctx.env[e.Name]; given && manifest.CredentialLike(e.Name) {
			m.Env[i].Secret = true
		}
	}
	for i := range m.Benchmarks {
		if m.Benchmarks[i].Workdir == "" {
			m.Benchmarks[i].Workdir = Workspace
		}
	}
	return m, warns, nil
}

// needVendor: the selected models' Dockerfiles are picked by GPU vendor, which the context
// must then give (madengine's run detects it; benchctl picks images before any node runs).
// One problem says so, rather than one per model; a catalog that does not load is left
// for the import to report with its lines.
func needVendor(catalog string, tags []string, ctx *madContext, d Discovery) error {
	if ctx.vendor == manifest.VendorAMD || ctx.vendor == manifest.VendorNVIDIA {
		return nil
	}
	cat, err := LoadCheckoutCatalog(context.Background(), catalog, d)
	if err != nil {
		return nil
	}
	picked, _, err := cat.Select(tags, nil)
	if err != nil {
		return nil
	}
	var prefixes []string
	for _, m := range picked {
		if m.Dockerfile != "" && !slices.Contains(prefixes, m.Dockerfile) {
			prefixes = append(prefixes, m.Dockerfile)
		}
	}
	if len(prefixes) == 0 {
		return nil
	}
	if len(prefixes) > 5 {
		prefixes = append(prefixes[:5], "...")
	}
	is := "is not given"
	if ctx.vendor != "" {
		is = "is " + strconv.Quote(ctx.vendor)
	}
	return &document.Error{File: ctx.label, Kind: "input", Problems: []document.Problem{{File: ctx.label, Path: "gpu_vendor",
		Msg: fmt.Sprintf(`%s, and each model's image is its Dockerfile picked by GPU vendor (%s): give "gpu_vendor": "AMD" or "NVIDIA"`, is, strings.Join(prefixes, ", "))}}}
}

// checkout is one checkout run being resolved.
type checkout struct {
	dir string      // the checkout, absolute
	ctx *madContext // the context, checked
	doc string      // the name of the manifest document it stands for (never written)
}

type docMount struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// document writes the manifest the run stands for; redact hides the values of
// credential-like docker_env_vars (for the digest).
func (c *checkout) document(tags []string, redact bool) ([]byte, error) {
	base := filepath.Base(c.dir)
	name := manifest.SuggestName(base)
	if name == "benchmark" && base != name { // nothing of the folder's name could be used
		name = "mad"
	}
	gpu := map[string]any{"vendor": manifest.VendorAuto}
	if c.ctx.vendor != "" {
		gpu["vendor"] = c.ctx.vendor
	}
	if n, err := strconv.Atoi(c.ctx.count); err == nil {
		gpu["count"] = n
	} else if c.ctx.count != "" {
		gpu["count"] = c.ctx.count
	}
	models := map[string]any{"catalog": literal(filepath.Join(c.dir, "models.json")), "tags": tags}
	if c.ctx.guestOS != "" {
		models["guestOS"] = c.ctx.guestOS
	}
	var mounts []docMount
	for _, mt := range c.ctx.mounts {
		mounts = append(mounts, docMount{Source: mt.source, Target: mt.target})
	}
	doc := map[string]any{"name": name, "gpu": gpu, "models": models, "mounts": mounts}
	if c.ctx.logScan != nil {
		doc["logScan"] = c.ctx.logScan
	}
	if len(c.ctx.toolNames) > 0 {
		doc["tools"] = c.ctx.toolNames
	}
	if len(c.ctx.buildArgs) > 0 {
		doc["image"] = map[string]any{"buildArgs": c.ctx.buildArgs}
	}
	if len(c.ctx.env) > 0 {
		env := map[string]string{}
		for k, v := range c.ctx.env {
			if redact && manifest.CredentialLike(k) {
				v = manifest.Redacted
			}
			env[k] = v
		}
		doc["env"] = env
	}
	return json.Marshal(doc)
}

// literal escapes a path benchctl writes into the document, so that a `$` in a folder's
// name is not taken for a ${VAR}.
func literal(p string) string { return strings.ReplaceAll(p, "$", "$$") }
