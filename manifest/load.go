package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest/document"
)

// MaxFileSize bounds the manifest file size; a manifest is a few KiB.
const MaxFileSize = 4 << 20

// CatalogFunc imports the benchmarks a manifest's `models:` block selects. It is supplied by
// the models package (which imports this one), so that manifest stays at the bottom of the
// import graph. Problems in the catalog file are returned as an *Error; warnings as text.
type CatalogFunc func(imp CatalogImport) ([]Benchmark, []string, error)

// CatalogImport is what a catalog import is asked for: the selection, and what picks each
// model's image.
type CatalogImport struct {
	Models
	// Vendor is the manifest's gpu.vendor: amd or nvidia pick each model's Dockerfile by its
	// CONTEXT line; auto and none cannot (the import says so, unless Image names one).
	Vendor string
	// Image is the manifest's image: when it names one (Given), it is every model's and no
	// Dockerfile is picked; else its BuildArgs, Target and Platform apply to every model's.
	Image Image
	// Context is the manifest's load's (Options.Context): the import stops when it ends.
	Context context.Context
}

// Options control Load.
type Options struct {
	// Lookup reads environment variables for ${VAR} expansion; nil means none is set.
	Lookup Lookup
	// Catalog imports `models:`; nil makes a manifest with `models:` an error.
	Catalog CatalogFunc
	// Context stops the parse and the checks when it ends (a signal): Load then returns
	// its cause. nil means never.
	Context context.Context
}

func (o Options) context() context.Context {
	if o.Context == nil {
		return context.Background()
	}
	return o.Context
}

// Load reads, validates and resolves the manifest at path. It returns every problem found
// (as an *Error) or the resolved Manifest and warnings that do not stop it.
func Load(path string, opts Options) (*Manifest, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, invalidFile(path, fmt.Sprintf("cannot resolve the path: %v", err))
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return nil, nil, invalidFile(path, "is a directory, not a manifest file")
	}
	f, err := safefile.Open(abs) // a FIFO or a device is refused, never read (it could block forever)
	if err != nil {
		var nr *safefile.NotRegularError
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, nil, invalidFile(path, "no such file (give the path of a .yaml, .yml or .json manifest)")
		case errors.As(err, &nr):
			return nil, nil, invalidFile(path, "is "+nr.What+", not a manifest file: give the path of a .yaml, .yml or .json file")
		}
		return nil, nil, invalidFile(path, fmt.Sprintf("cannot read: %v", err))
	}
	defer f.Close()
	data, err := document.ReadLimited(f, MaxFileSize)
	if err != nil {
		return nil, nil, invalidFile(path, fmt.Sprintf("cannot read: %v", err))
	}
	if len(data) > MaxFileSize {
		return nil, nil, invalidFile(path, fmt.Sprintf("is larger than %d MiB; a manifest is a small text file", MaxFileSize>>20))
	}
	return Parse(path, abs, data, opts)
}

// Parse validates and resolves manifest bytes. name is the file name used in messages;
// abs is the absolute path that relative paths in the manifest are resolved against.
func Parse(name, abs string, data []byte, opts Options) (*Manifest, []string, error) {
	switch ext := strings.ToLower(filepath.Ext(name)); ext {
	case ".yaml", ".yml", ".json":
	default:
		return nil, nil, invalidFile(name, fmt.Sprintf("unknown manifest extension %s (use .yaml, .yml or .json)", document.Quote(ext)))
	}
	ctx := opts.context()
	root, err := document.ParseContext(ctx, name, data)
	if err != nil {
		var pe *document.ParseError
		if errors.As(err, &pe) {
			return nil, nil, &document.Error{File: name, Problems: []document.Problem{{File: name, Line: pe.Line, Msg: pe.Msg}}}
		}
		return nil, nil, err
	}
	p := document.NewProblems(name)
	p.SetLine("", root.Line)
	var spec Spec
	if root.Kind != document.MapNode {
		p.At(root.Line, "", "a manifest must be a mapping of fields (name, image, benchmarks, …), got %s", root.Describe())
		return nil, nil, p.Err()
	}
	d := &document.Decoder{Problems: p, Ctx: ctx}
	d.Decode(root, reflect.ValueOf(&spec).Elem(), "")
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("checking %s: %w", name, context.Cause(ctx))
	}
	lookup := opts.Lookup
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	r := &resolver{p: p, ctx: ctx, dir: filepath.Dir(abs), lookup: lookup, catalog: opts.Catalog}
	m := r.resolve(&spec)
	if r.more > 0 {
		r.warnings = append(r.warnings, fmt.Sprintf("%s: … and %d more warnings", name, r.more))
	}
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("checking %s: %w", name, context.Cause(ctx))
	}
	if err := p.Err(); err != nil {
		return nil, r.warnings, err
	}
	m.Path = abs
	sum := sha256.Sum256(data)
	m.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return m, r.warnings, nil
}

func invalidFile(name, msg string) error {
	return &document.Error{File: name, Problems: []document.Problem{{File: name, Msg: msg}}}
}
