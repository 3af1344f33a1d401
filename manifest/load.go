package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
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
	data, err := ReadLimited(f, MaxFileSize)
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
		return nil, nil, invalidFile(name, fmt.Sprintf("unknown manifest extension %s (use .yaml, .yml or .json)", quote(ext)))
	}
	ctx := opts.context()
	root, err := ParseDocumentContext(ctx, name, data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return nil, nil, &Error{File: name, Problems: []Problem{{File: name, Line: pe.Line, Msg: pe.Msg}}}
		}
		return nil, nil, err
	}
	p := newProblems(name)
	p.pos[""] = root.Line
	var spec Spec
	if root.Kind != MapNode {
		p.at(root.Line, "", "a manifest must be a mapping of fields (name, image, benchmarks, …), got %s", root.describe())
		return nil, nil, p.err()
	}
	d := &decoder{p: p, ctx: ctx}
	d.decode(root, reflect.ValueOf(&spec).Elem(), "")
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("checking %s: %w", name, cancelled(ctx))
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
		return nil, nil, fmt.Errorf("checking %s: %w", name, cancelled(ctx))
	}
	if err := p.err(); err != nil {
		return nil, r.warnings, err
	}
	m.Path = abs
	sum := sha256.Sum256(data)
	m.Digest = "sha256:" + hex.EncodeToString(sum[:])
	return m, r.warnings, nil
}

// ParseDocument parses JSON (by a .json name) or YAML into a Node tree.
func ParseDocument(name string, data []byte) (*Node, error) {
	return ParseDocumentContext(context.Background(), name, data)
}

// ParseDocumentContext is ParseDocument that stops when ctx ends, returning its cause.
// Whatever data holds, the parse keeps a bounded number of values (see the limits in
// limits.go): a larger document is a *ParseError that says which limit it passed.
func ParseDocumentContext(ctx context.Context, name string, data []byte) (*Node, error) {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return parseJSON(ctx, name, data)
	}
	return parseYAML(ctx, name, data)
}

// ReadLimited reads f to its end, at most limit+1 bytes (more than limit means too large:
// the caller says so). The buffer is sized from the file's size, so that a file near the
// limit costs its size once, not the several copies of a growing buffer.
func ReadLimited(f *os.File, limit int64) ([]byte, error) {
	size := int64(512)
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		size = min(st.Size(), limit) + 1
	}
	buf := make([]byte, 0, size)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew since the stat
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), int(limit)+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

func invalidFile(name, msg string) error {
	return &Error{File: name, Problems: []Problem{{File: name, Msg: msg}}}
}
