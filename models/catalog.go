package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest/document"

	"github.com/benchctl/benchctl/manifest"
)

// MaxCatalogSize bounds a catalog file (MAD's models.json is a few hundred KiB).
const MaxCatalogSize = 64 << 20

// Model is one catalog entry as madengine/MAD writes it.
type Model struct {
	Name              string
	URL               string
	Cred              string // cred: the credential.json entry the url is cloned with
	Dockerfile        string // prefix, e.g. docker/pyt_vllm
	Scripts           string // script, folder or program run in the container
	NGPUs             string // "-1" means all GPUs
	Owner             string
	TrainingPrecision string
	Tags              []string
	Args              string
	Timeout           int // seconds; 0 means the default
	MultipleResults   string
	SkipGPUArch       []string
	NoLogScan         bool              // log_error_pattern_scan: false
	LogErrors         []string          // log_error_patterns: this model's error patterns, instead of the defaults
	LogBenign         []string          // log_error_benign_patterns: lines this model's scan ignores, besides the defaults
	RunOptions        string            // additional_docker_run_options
	Extra             map[string]string // keys benchctl does not use, kept as JSON text
	Launcher          string            // distributed.launcher, canonical; "": none named
	Distributed       *manifest.Distributed
	Line              int
	Scope             string // the folder of scripts/<dir>/models.json it comes from ("dir"); "" for the checkout's models.json
	File              string // the file it comes from, when not the catalog's (a scripts/<dir>/ catalog)
	Data              string // data: the data names it reads (data.json's keys, comma-separated)
}

// Catalog is a parsed models.json.
type Catalog struct {
	Path     string
	Models   []Model
	Warnings []string // at most document.MaxProblems, and a line that counts the others
	more     int
}

var known = map[string]bool{"name": true, "url": true, "dockerfile": true, "scripts": true, "n_gpus": true,
	"owner": true, "training_precision": true, "tags": true, "args": true, "timeout": true,
	"multiple_results": true, "skip_gpu_arch": true, "log_error_pattern_scan": true,
	"log_error_patterns": true, "log_error_benign_patterns": true,
	"additional_docker_run_options": true, "distributed": true, "data": true, "cred": true}

// Load reads a MAD-style catalog: a JSON list of model objects. Problems are returned
// together as a *document.Error, located by line; unknown keys are kept, with a warning.
func Load(path string) (*Catalog, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load that stops when ctx ends, returning its cause. Any file within
// MaxCatalogSize is read in bounded memory: the parse keeps a bounded number of values
// (document.ParseContext), and at most document.MaxProblems problems and as many
// warnings are kept (the others are counted).
func LoadContext(ctx context.Context, path string) (*Catalog, error) {
	f, err := safefile.Open(path) // a FIFO is refused, never read (it could block forever)
	if err != nil {
		var nr *safefile.NotRegularError
		if errors.Is(err, os.ErrNotExist) {
			return nil, catalogError(path, 0, "no such file")
		}
		if errors.As(err, &nr) {
			return nil, catalogError(path, 0, "is "+nr.What+", not a models.json file")
		}
		return nil, catalogError(path, 0, fmt.Sprintf("cannot read: %v", err))
	}
	defer f.Close()
	data, err := document.ReadLimited(f, MaxCatalogSize)
	if err != nil {
		return nil, catalogError(path, 0, fmt.Sprintf("cannot read: %v", err))
	}
	if len(data) > MaxCatalogSize {
		return nil, catalogError(path, 0, fmt.Sprintf("is larger than %d MiB", MaxCatalogSize>>20))
	}
	return parseCatalog(ctx, path, data)
}

// parseCatalog reads a catalog's bytes; path names it in problems and warnings.
func parseCatalog(ctx context.Context, path string, data []byte) (*Catalog, error) {
	root, err := document.ParseContext(ctx, "catalog.json", data) // JSON whatever the file's name
	data = nil                                                    // the tree holds what is needed
	if err != nil {
		var pe *document.ParseError
		if errors.As(err, &pe) {
			return nil, catalogError(path, pe.Line, pe.Msg)
		}
		return nil, err
	}
	c := &Catalog{Path: path}
	e := &document.Error{File: path, Kind: "catalog"}
	add := func(line int, fp, format string, args ...any) {
		e.Add(document.Problem{File: path, Line: line, Path: fp, Msg: fmt.Sprintf(format, args...)})
	}
	if root.Kind != document.SeqNode {
		add(root.Line, "", "a catalog must be a JSON list of models, got %s", root.Kind)
		return nil, e
	}
	seen := map[string]int{}
	for i, it := range root.Items {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("reading the catalog %s: %w", path, context.Cause(ctx))
		}
		fp := fmt.Sprintf("[%d]", i)
		if it.Kind != document.MapNode {
			add(it.Line, fp, "a model must be an object, got %s", it.Kind)
			continue
		}
		m := c.model(it, fp, add)
		switch {
		case m.Name == "":
			add(it.Line, fp+".name", "is required")
		case !manifest.ValidBenchmarkName(m.Name):
			add(it.Line, fp+".name", "%s is not usable as a benchmark name (letters, digits, '.', '_', '-')", document.Quote(m.Name))
		default:
			if j, dup := seen[m.Name]; dup {
				add(it.Line, fp+".name", "%q is already the name of model [%d]", m.Name, j)
			}
			seen[m.Name] = i
		}
		if m.Scripts == "" {
			add(it.Line, fp+".scripts", "is required: the script or program the model runs")
		}
		if m.URL != "" {
			if err := checkURL(m.URL); err != nil {
				add(it.Line, fp+".url", "%v", err)
			}
		}
		// The checks the manifest's own benchmarks get.
		if m.MultipleResults != "" {
			if clean, ok := manifest.CleanResultsPath(m.MultipleResults); ok {
				m.MultipleResults = clean
			} else {
				add(it.Line, fp+".multiple_results", "%s must be a file name relative to the output folder (e.g. perf.csv)", document.Quote(m.MultipleResults))
			}
		}
		for j, t := range m.Tags {
			if !manifest.ValidTag(t) {
				add(it.Line, fmt.Sprintf("%s.tags[%d]", fp, j), "%s is not a tag (no spaces or commas)", document.Quote(t))
			}
		}
		c.Models = append(c.Models, m)
	}
	if len(e.Problems) > 0 {
		return nil, e
	}
	if c.more > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: … and %d more warnings", path, c.more))
	}
	return c, nil
}

// warn records a warning, keeping the first document.MaxProblems.
func (c *Catalog) warn(format string, args ...any) {
	if len(c.Warnings) >= document.MaxProblems {
		c.more++
		return
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf(format, args...))
}

type addFunc func(line int, fp, format string, args ...any)

// model reads one catalog entry.
func (c *Catalog) model(it *document.Node, fp string, add addFunc) Model {
	m := Model{Line: it.Line}
	for k, key := range it.Keys {
		v := it.Items[k]
		kp := fp + "." + document.Clip(key.Value)
		if !known[key.Value] {
			if m.Extra == nil {
				m.Extra = map[string]string{}
			}
			m.Extra[key.Value] = nodeJSON(v)
			c.warn("%s:%d: %s: unknown key kept as metadata (benchctl does not use it)", c.Path, key.Line, kp)
			continue
		}
		switch key.Value {
		case "tags", "skip_gpu_arch":
			list, ok := stringList(v)
			if !ok {
				add(v.Line, kp, "must be a list of strings or a comma-separated string, got %s", v.Kind)
			}
			if key.Value == "tags" {
				m.Tags = list
			} else {
				m.SkipGPUArch = list
			}
		case "timeout":
			t, ok := timeoutValue(v)
			if !ok {
				add(v.Line, kp, "must be a number of seconds up to a year (-1 or 0 for the default), got %s", document.Quote(v.Value))
			}
			m.Timeout = t
		case "log_error_pattern_scan":
			switch strings.ToLower(v.Value) {
			case "true", "1", "yes":
			case "false", "0", "no":
				m.NoLogScan = v.Kind == document.ScalarNode
			default:
				add(v.Line, kp, "must be true or false, got %s", document.Quote(v.Value))
			}
		case "log_error_patterns", "log_error_benign_patterns":
			list, msg := patternList(v)
			if msg != "" {
				add(v.Line, kp, "%s", msg)
			} else if key.Value == "log_error_patterns" {
				if len(list) == 0 {
					add(v.Line, kp, "is empty: it replaces the default error patterns; to turn the scan off, write \"log_error_pattern_scan\": false")
				}
				m.LogErrors = list
			} else {
				m.LogBenign = list
			}
		case "distributed":
			c.distributed(&m, v, kp, add)
		case "n_gpus":
			if v.Kind != document.ScalarNode {
				add(v.Line, kp, "must be a number as a string, e.g. \"8\" or \"-1\"")
			} else if n, err := strconv.Atoi(v.Value); err != nil || n < -1 {
				add(v.Line, kp, "%s is not a GPU count (\"-1\" means all)", document.Quote(v.Value))
			}
			m.NGPUs = v.Value
		default:
			if v.Kind == document.NullNode {
				continue
			}
			if v.Kind != document.ScalarNode {
				add(v.Line, kp, "must be a string, got %s", v.Kind)
				continue
			}
			setString(&m, key.Value, v.Value)
		}
	}
	return m
}

func setString(m *Model, key, v string) {
	switch key {
	case "name":
		m.Name = v
	case "url":
		m.URL = v
	case "cred":
		m.Cred = v
	case "dockerfile":
		m.Dockerfile = v
	case "scripts":
		m.Scripts = v
	case "additional_docker_run_options":
		m.RunOptions = v
	case "owner":
		m.Owner = v
	case "training_precision":
		m.TrainingPrecision = v
	case "args":
		m.Args = v
	case "multiple_results":
		m.MultipleResults = v
	case "data":
		m.Data = v
	}
}

func catalogError(path string, line int, msg string) error {
	return &document.Error{File: path, Kind: "catalog", Problems: []document.Problem{{File: path, Line: line, Msg: msg}}}
}

// stringList reads a list of strings or a comma-separated string.
// patternList reads a list of log patterns: literal text a log line contains, one line
// each, not blank (madengine's log_error_patterns and log_error_benign_patterns). A
// comma-separated string is not accepted: a pattern may contain a comma.
func patternList(n *document.Node) ([]string, string) {
	if n.Kind != document.SeqNode {
		return nil, fmt.Sprintf("must be a list of strings (the text a log line contains), got %s", n.Kind)
	}
	out := make([]string, 0, len(n.Items))
	for i, it := range n.Items {
		if it.Kind != document.ScalarNode || strings.TrimSpace(it.Value) == "" || strings.ContainsAny(it.Value, "\n\r") {
			return nil, fmt.Sprintf("item %d is not a pattern: give the text a log line contains (one line, not blank)", i)
		}
		if len(it.Value) > 4096 {
			return nil, fmt.Sprintf("item %d is %d bytes long: a pattern is at most 4096", i, len(it.Value))
		}
		out = append(out, it.Value)
	}
	return out, ""
}

func stringList(n *document.Node) ([]string, bool) {
	var parts []string
	switch n.Kind {
	case document.NullNode:
		return nil, true
	case document.ScalarNode:
		parts = strings.Split(n.Value, ",")
	case document.SeqNode:
		for _, it := range n.Items {
			if it.Kind != document.ScalarNode {
				return nil, false
			}
			parts = append(parts, it.Value)
		}
	default:
		return nil, false
	}
	var out []string
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, true
}

// maxTimeout is the longest timeout a catalog may give, in seconds (a year).
const maxTimeout = 365 * 24 * 3600

// timeoutValue reads a timeout in seconds; -1 and 0 mean the default (returned as 0).
func timeoutValue(n *document.Node) (int, bool) {
	if n.Kind == document.NullNode {
		return 0, true
	}
	if n.Kind != document.ScalarNode {
		return 0, false
	}
	t, err := strconv.Atoi(strings.TrimSpace(n.Value))
	if err != nil || t < -1 || t > maxTimeout {
		return 0, false
	}
	return max(t, 0), true
}

// nodeJSON renders a node back to compact JSON text (for keys kept as metadata).
func nodeJSON(n *document.Node) string {
	out, err := json.Marshal(nodeValue(n))
	if err != nil {
		return n.Value
	}
	return string(out)
}

func nodeValue(n *document.Node) any {
	switch n.Kind {
	case document.MapNode:
		m := map[string]any{}
		for i, k := range n.Keys {
			m[k.Value] = nodeValue(n.Items[i])
		}
		return m
	case document.SeqNode:
		l := make([]any, len(n.Items))
		for i, it := range n.Items {
			l[i] = nodeValue(it)
		}
		return l
	case document.NullNode:
		return nil
	}
	if n.Tag == document.TagInt || n.Tag == document.TagFloat || n.Tag == document.TagBool {
		return json.RawMessage(n.Value)
	}
	return n.Value
}

// AllTags lists every tag used in the catalog, sorted.
func (c *Catalog) AllTags() []string {
	set := map[string]bool{}
	for _, m := range c.Models {
		for _, t := range m.Tags {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Dir is the folder of the catalog (MAD's repository root).
func (c *Catalog) Dir() string { return filepath.Dir(c.Path) }
