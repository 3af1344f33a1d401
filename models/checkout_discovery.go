package models

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// A MAD checkout's catalog is more than its models.json, as madengine discovers it
// (madengine's utils/discover_models.py): every folder scripts/<dir> may hold a
// models.json of its own, or a get_models_json.py whose list_models() returns generated
// entries (not both). Their models are named <dir>/<name>, their dockerfile and scripts
// are relative to scripts/<dir>, and their tags stay as written: a plain tag selects
// models of every file, and <dir>/<tag> (exactly one '/') only those of scripts/<dir>.

// GeneratorFlag is the flag that lets benchctl run a checkout's get_models_json.py.
const GeneratorFlag = "--run-get-models-json"

// Discovery says how a checkout's catalog is put together.
type Discovery struct {
	// RunGenerators lets scripts/<dir>/get_models_json.py run (python3, on this machine,
	// with the checkout's code): GeneratorFlag. Without it a checkout that has one is
	// refused, saying so.
	RunGenerators bool
	// GeneratorTimeout bounds one get_models_json.py run; 0 means GeneratorTimeout.
	GeneratorTimeout time.Duration
}

// maxScriptDirs bounds the folders of scripts/ looked at (MAD has a few hundred).
const maxScriptDirs = 10000

// LoadCheckoutCatalog loads the catalog at file and, when it is a models.json with a
// scripts/ folder beside it (a MAD checkout), the models madengine discovers under
// scripts/<dir>. Problems name the file they are in; a model name used twice (after the
// <dir>/ prefix, or as a benchmark name: <dir>_<name>) is an error naming both files.
func LoadCheckoutCatalog(ctx context.Context, file string, d Discovery) (*Catalog, error) {
	c, err := LoadContext(ctx, file)
	if err != nil || filepath.Base(file) != "models.json" {
		return c, err
	}
	scripts := filepath.Join(filepath.Dir(file), "scripts")
	st, err := os.Stat(scripts)
	if err != nil || !st.IsDir() {
		return c, nil
	}
	entries, err := os.ReadDir(scripts)
	if err != nil {
		return nil, catalogError(scripts, 0, fmt.Sprintf("cannot list the folder: %v", err))
	}
	if len(entries) > maxScriptDirs {
		return nil, catalogError(scripts, 0, fmt.Sprintf("holds %d entries: at most %d folders are looked at for models", len(entries), maxScriptDirs))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("discovering the models of %s: %w", scripts, context.Cause(ctx))
		}
		dir := filepath.Join(scripts, e.Name())
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		json, gen := filepath.Join(dir, "models.json"), filepath.Join(dir, "get_models_json.py")
		hasJSON, hasGen := isFile(json), isFile(gen)
		if !hasJSON && !hasGen {
			continue
		}
		if !manifest.ValidBenchmarkName(e.Name()) {
			return nil, catalogError(dir, 0, fmt.Sprintf("%s is not usable in a model's name (<dir>/<name>): letters, digits, '.', '_', '-'; rename the folder", document.Quote(e.Name())))
		}
		if hasJSON && hasGen {
			return nil, catalogError(dir, 0, "holds both models.json and get_models_json.py: madengine refuses that too; keep one")
		}
		var sub *Catalog
		if hasJSON {
			sub, err = LoadContext(ctx, json)
		} else {
			if !d.RunGenerators {
				return nil, catalogError(gen, 0, fmt.Sprintf("generates this checkout's models of scripts/%s, and benchctl runs it (python3, with this checkout's code, on this machine) only when you say so: add %s to run, build or submit with --tags in the checkout (a manifest's catalog never runs it)", e.Name(), GeneratorFlag))
			}
			sub, err = cachedGeneratedCatalog(ctx, filepath.Dir(file), gen, cmp.Or(d.GeneratorTimeout, GeneratorTimeout))
		}
		if err != nil {
			return nil, err
		}
		c.Warnings = append(c.Warnings, sub.Warnings...)
		for _, m := range sub.Models {
			m.File = sub.Path
			m.Scope = e.Name()
			m.Name = e.Name() + "/" + m.Name
			m.Dockerfile = underScripts(e.Name(), m.Dockerfile)
			m.Scripts = underScripts(e.Name(), m.Scripts)
			c.Models = append(c.Models, m)
		}
	}
	return c, uniqueNames(c)
}

// underScripts is p relative to the checkout, for p relative to scripts/<dir> (as
// madengine's os.path.normpath(os.path.join("scripts", dir, p))); an absolute or empty p
// stays as it is.
func underScripts(dir, p string) string {
	if p == "" || path.IsAbs(p) {
		return p
	}
	return path.Clean(path.Join("scripts", dir, p))
}

// uniqueNames refuses two models of one name, or of one benchmark name.
func uniqueNames(c *Catalog) error {
	seen := map[string]Model{}
	e := &document.Error{File: c.Path, Kind: "catalog"}
	for _, m := range c.Models {
		keys := []string{m.Name}
		if b := BenchmarkName(m.Name); b != m.Name {
			keys = append(keys, b)
		}
		for _, k := range keys {
			if prev, dup := seen[k]; dup {
				e.Add(document.Problem{File: fileOf(c, m), Line: m.Line, Path: m.Name, Msg: fmt.Sprintf("the name %s is taken by model %s (%s:%d): rename one", k, prev.Name, fileOf(c, prev), prev.Line)})
				break
			}
		}
		for _, k := range keys {
			seen[k] = m
		}
	}
	if len(e.Problems) > 0 {
		return e
	}
	return nil
}

// fileOf is the file a model comes from.
func fileOf(c *Catalog, m Model) string {
	if m.File != "" {
		return m.File
	}
	return c.Path
}

// BenchmarkName is the benchmark a catalog model becomes: its name, with the '/' of a
// scripts/<dir> model's <dir>/<name> made '_' (as madengine names its log files), since a
// benchmark's name names files and containers.
func BenchmarkName(model string) string { return strings.ReplaceAll(model, "/", "_") }

// isFile says whether p is a regular file (following a link, as madengine does).
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// scopedTag splits a tag of exactly one '/' and no ':' into scope and filter, as
// madengine's select_models does.
func scopedTag(t string) (scope, filter string, ok bool) {
	if strings.Count(t, "/") != 1 || strings.Contains(t, ":") {
		return "", "", false
	}
	scope, filter, _ = strings.Cut(t, "/")
	return scope, filter, scope != "" && filter != ""
}
