package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/benchctl/benchctl/manifest/document"
)

const schemaFile = "../docs/manifest.schema.json"

func TestSchemaIsCurrent(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(schemaFile)
	if err != nil || !bytes.Equal(have, want) {
		t.Fatalf("docs/manifest.schema.json is stale: run go generate ./manifest/ (or make schema)")
	}
}

// compiledSchema compiles Schema() as a draft-07 validator would (which also checks the
// schema against draft-07's meta-schema).
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("manifest.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("manifest.schema.json")
	if err != nil {
		t.Fatalf("the schema is not a valid draft-07 schema: %v", err)
	}
	return sch
}

// instance is a manifest as a JSON Schema validator sees it, from the Node tree benchctl's
// decoder reads (merge keys and aliases resolved, YAML scalars typed as the decoder types
// them).
func instance(t *testing.T, name string, data []byte) any {
	t.Helper()
	n, err := document.Parse(name, data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var conv func(n *document.Node) any
	conv = func(n *document.Node) any {
		switch n.Kind {
		case document.MapNode:
			m := map[string]any{}
			for i, k := range n.Keys {
				m[k.Value] = conv(n.Items[i])
			}
			return m
		case document.SeqNode:
			l := []any{}
			for _, it := range n.Items {
				l = append(l, conv(it))
			}
			return l
		case document.NullNode:
			return nil
		}
		switch n.Tag {
		case document.TagBool:
			return strings.EqualFold(n.Value, "true")
		case document.TagInt, document.TagFloat:
			if json.Valid([]byte(n.Value)) {
				return json.Number(n.Value)
			}
		}
		return n.Value
	}
	return conv(n)
}

// The shipped examples, the test manifests and the manifests in the docs are valid by the
// schema (the starter too: starter_schema_test.go).
func TestExampleManifestsMatchTheSchema(t *testing.T) {
	sch := compiledSchema(t)
	check := func(what, name string, data []byte) {
		if err := sch.Validate(instance(t, name, data)); err != nil {
			t.Errorf("%s does not match the schema: %v", what, err)
		}
	}
	files, _ := filepath.Glob("../models/*/benchmark.yaml")
	more, _ := filepath.Glob("../tests/fixtures/*/*.yaml")
	files = append(files, more...)
	files = append(files, "testdata/good.yaml", "testdata/good.json")
	if len(files) < 5 {
		t.Fatalf("found only %d example manifests: %v", len(files), files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(f, f, data)
	}
	// the starter manifest: starter_schema_test.go

	docs, _ := filepath.Glob("../docs/*.md")
	blocks := 0
	for _, doc := range append(docs, "../README.md") {
		for line, block := range yamlBlocks(t, doc) {
			if strings.Contains(block, "...") {
				continue // an outline with placeholders, not a manifest
			}
			blocks++
			n, err := document.Parse("m.yaml", []byte(block))
			if err != nil {
				t.Errorf("%s:%d: %v", doc, line, err)
				continue
			}
			// A block that shows one field is checked inside a minimal manifest.
			if n.Get("name") == nil {
				block = "name: example\n" + block
			}
			if n.Get("benchmarks") == nil && n.Get("models") == nil {
				block += "\nbenchmarks: [{name: b, command: [\"true\"]}]\n"
			}
			check(fmt.Sprintf("%s:%d", doc, line), "m.yaml", []byte(block))
		}
	}
	if blocks < 3 {
		t.Errorf("found only %d yaml blocks in the docs; the extractor is broken", blocks)
	}
}

// yamlBlocks returns the ```yaml blocks of a markdown file by their first line.
func yamlBlocks(t *testing.T, path string) map[int]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]string{}
	var b strings.Builder
	in, start := false, 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch fence, isFence := strings.CutPrefix(strings.TrimSpace(line), "```"); {
		case isFence && in:
			out[start] = b.String()
			b.Reset()
			in = false
		case isFence && fence == "yaml":
			in, start = true, n+1
		case in:
			b.WriteString(line + "\n")
		}
	}
	return out
}

// schemaCase is a manifest that the schema and `benchctl validate` (Parse) both accept, or
// both refuse.
type schemaCase struct {
	name, yaml string
	valid      bool
}

// Manifests built around one field: sHead has a name and an image, sBench a benchmark.
const (
	sHead  = "name: t\nimage: {ref: busybox}\n"
	sBench = "benchmarks: [{name: b, command: [\"true\"]}]\n"
)

func TestSchemaAgreesWithTheDecoder(t *testing.T) {
	cases := []schemaCase{
		{"minimal", sHead + sBench, true},
		{"version 1", "version: 1\n" + sHead + sBench, true},
		{"empty sections", sHead + sBench + "gpu:\nmounts:\nenv:\ncontainer:\nslurm:\njob:\nlogScan:\nsecrets:\n", true},
		{"mount forms", sHead + sBench + "mounts: [\"/a:/a\", \"/b:/b:ro\", \"${D:-/x}:/c:rw\", {source: /d, target: /d, readOnly: true}]\n", true},
		{"env values kept as written", sHead + sBench + "env: {A: 8, B: true, C: 1.5, D: text}\n", true},
		{"gpu counts", sHead + sBench + "gpu: {vendor: amd, count: 8}\n", true},
		{"sizes", sHead + sBench + "container: {shmSize: 1024}\n", true},
		{"sizes with units", sHead + sBench + "container: {shmSize: 16GiB}\n", true},
		{"ulimit forms", sHead + sBench + "container: {ulimits: {memlock: -1, nofile: {soft: 1024, hard: 4096}}}\n", true},
		{"extra options as a string", sHead + sBench + "container: {extraOptions: \"--cap-add SYS_PTRACE\"}\n", true},
		{"extra options as a list", sHead + sBench + "container: {extraOptions: [\"--cap-add\", \"SYS_PTRACE\"]}\n", true},
		{"durations", sHead + "benchmarks: [{name: b, command: [\"true\"], timeout: 1h30m}, {name: c, command: [x], timeout: 1.5h}]\njob: {heartbeat: 500ms}\n", true},
		{"extension keys and merges", "x-env: &env {A: a}\n" + sHead + sBench + "env:\n  <<: *env\n  B: b\n", true},
		{"a benchmark's own image", "name: t\nbenchmarks: [{name: b, command: [\"true\"], image: {ref: busybox}}]\n", true},
		{"slurm", sHead + sBench + "slurm: {nodes: 2, partition: gpu, time: \"02:00:00\", gpusPerNode: 0, exclusive: true, sbatchArgs: [\"--constraint=x\"]}\n", true},

		{"an experiment", sHead + "benchmarks: [{name: b, command: [x, \"{{batch}}\"]}]\nexperiment: {matrix: {nodes: [1, 2], batch: [16, \"32\", 1.5], exclude: [{nodes: 1}], include: [{nodes: 2, batch: 64, x: true}]}, repeat: 3, warmup: 1, order: shuffle, seed: 7}\n", true},
		{"an experiment without a matrix", sHead + sBench + "experiment: {repeat: 2}\n", true},
		{"metrics", sHead + sBench + "metrics: {tokens_per_second: {better: higher, tolerance: 3%}, latency_ms: {better: lower, tolerance: 5}, \"*_busbw\": {better: higher}, x: {tolerance: \"0.5 %\"}}\n", true},
		{"a metric with a bad direction", sHead + sBench + "metrics: {tps: {better: up}}\n", false},
		{"a metric with a bad tolerance", sHead + sBench + "metrics: {tps: {tolerance: lots}}\n", false},
		{"a metric with an unknown field", sHead + sBench + "metrics: {tps: {better: higher, threshold: 3%}}\n", false},

		{"telemetry interval", sHead + sBench + "telemetry: {interval: 250ms}\n", true},
		{"telemetry off", sHead + sBench + "telemetry: off\n", true},
		{"telemetry false", sHead + sBench + "telemetry: false\n", true},
		{"telemetry interval off", sHead + sBench + "telemetry: {interval: off}\n", true},
		{"telemetry on", sHead + sBench + "telemetry: on\n", false},
		{"telemetry an unknown field", sHead + sBench + "telemetry: {every: 1s}\n", false},
		{"telemetry interval a number", sHead + sBench + "telemetry: {interval: 1}\n", false},
		{"unknown top-level field", sHead + sBench + "benchmark: x\n", false},
		{"experiment nodes zero", sHead + sBench + "experiment: {matrix: {nodes: [0]}}\n", false},
		{"experiment nodes a string", sHead + sBench + "experiment: {matrix: {nodes: [\"2\"]}}\n", false},
		{"experiment empty values", sHead + sBench + "experiment: {matrix: {batch: []}}\n", false},
		{"experiment a scalar parameter", sHead + sBench + "experiment: {matrix: {batch: 16}}\n", false},
		{"experiment a bad parameter name", sHead + sBench + "experiment: {matrix: {batch-size: [1]}}\n", false},
		{"experiment repeat zero", sHead + sBench + "experiment: {repeat: 0}\n", false},
		{"experiment include a scalar", sHead + sBench + "experiment: {matrix: {include: [1]}}\n", false},
		{"unknown nested field", sHead + "benchmarks: [{name: b, command: [\"true\"], timout: 5m}]\n", false},
		{"unknown mount field", sHead + sBench + "mounts: [{source: /a, target: /a, ro: true}]\n", false},
		{"bad vendor", sHead + sBench + "gpu: {vendor: amdd}\n", false},
		{"bad failure policy", sHead + "benchmarks: [{name: b, command: [\"true\"], onFailure: stop}]\n", false},
		{"bad ulimit name", sHead + sBench + "container: {ulimits: {memlok: 1}}\n", false},
		{"command as a string", sHead + "benchmarks: [{name: b, command: \"bash run.sh\"}]\n", false},
		{"timeout as a number", sHead + "benchmarks: [{name: b, command: [\"true\"], timeout: 60}]\n", false},
		{"timeout without unit", sHead + "benchmarks: [{name: b, command: [\"true\"], timeout: \"60\"}]\n", false},
		{"negative timeout", sHead + "benchmarks: [{name: b, command: [\"true\"], timeout: -5m}]\n", false},
		{"zero GPUs", sHead + sBench + "gpu: {count: 0}\n", false},
		{"too many GPUs", sHead + sBench + "gpu: {count: 2000}\n", false},
		{"GPU count as a word", sHead + sBench + "gpu: {count: two}\n", false},
		{"env value as a list", sHead + sBench + "env: {A: [1]}\n", false},
		{"env value missing", sHead + sBench + "env: {A: }\n", false},
		{"name as a number", "name: 7\nimage: {ref: busybox}\n" + sBench, false},
		{"bool as a string", sHead + sBench + "slurm: {exclusive: \"yes\"}\n", false},
		{"number as a string", sHead + sBench + "slurm: {nodes: \"2\"}\n", false},
		{"no nodes", sHead + sBench + "slurm: {nodes: 0}\n", false},
		{"size as a bool", sHead + sBench + "container: {shmSize: true}\n", false},
		{"size without number", sHead + sBench + "container: {shmSize: lots}\n", false},
		{"half a ulimit", sHead + sBench + "container: {ulimits: {nofile: {soft: 1}}}\n", false},
		{"mount without target", sHead + sBench + "mounts: [\"/data\"]\n", false},
		{"mount object without target", sHead + sBench + "mounts: [{source: /a}]\n", false},
		{"extra options as a number", sHead + sBench + "container: {extraOptions: 5}\n", false},
		{"version 2", "version: 2\n" + sHead + sBench, false},
		{"no name", "image: {ref: busybox}\n" + sBench, false},
		{"bad name", "name: My_Bench\nimage: {ref: busybox}\n" + sBench, false},
		{"no benchmarks", sHead, false},
		{"a benchmark without a command", sHead + "benchmarks: [{name: b}]\n", false},
		{"a benchmark without a name", sHead + "benchmarks: [{command: [\"true\"]}]\n", false},
		{"an empty command", sHead + "benchmarks: [{name: b, command: []}]\n", false},
		{"a null benchmark", sHead + "benchmarks: [null]\n", false},
		{"dockerfile and ref", "name: t\nimage: {ref: busybox, dockerfile: Dockerfile}\n" + sBench, false},
		{"a benchmark image naming none", "name: t\nbenchmarks: [{name: b, command: [\"true\"], image: {target: x}}]\n", false},
		{"a bad secret name", sHead + sBench + "secrets: [1X]\n", false},
		{"a bad env name", sHead + sBench + "env: {A-B: x}\n", false},
		{"a top-level list", "- name: t\n", false},
	}
	checkAgreement(t, cases)
}

// checkAgreement runs each case through the schema and through Parse.
func checkAgreement(t *testing.T, cases []schemaCase) {
	t.Helper()
	sch := compiledSchema(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "models.json"), []byte("[]"), 0o644)
	opts := Options{Catalog: func(CatalogImport) ([]Benchmark, []string, error) {
		return []Benchmark{{Name: "model", Command: []string{"true"}}}, nil, nil
	}}
	for _, c := range cases {
		data := []byte(c.yaml)
		schemaErr := sch.Validate(instance(t, "m.yaml", data))
		_, _, parseErr := Parse("m.yaml", filepath.Join(dir, "m.yaml"), data, opts)
		if (schemaErr == nil) != c.valid {
			t.Errorf("%s: the schema says valid=%v, want %v: %v\n%s", c.name, schemaErr == nil, c.valid, schemaErr, c.yaml)
		}
		if (parseErr == nil) != c.valid {
			t.Errorf("%s: Parse says valid=%v, want %v: %v\n%s", c.name, parseErr == nil, c.valid, parseErr, c.yaml)
		}
	}
}

// enumManifests write a manifest with the value v in the field of each enum of the schema.
var enumManifests = map[string]func(v any) string{
	"version":                 func(v any) string { return fmt.Sprintf("version: %v\n", v) + sHead + sBench },
	"image.pull":              func(v any) string { return fmt.Sprintf("name: t\nimage: {ref: busybox, pull: %v}\n", v) + sBench },
	"gpu.vendor":              func(v any) string { return sHead + sBench + fmt.Sprintf("gpu: {vendor: %v}\n", v) },
	"gpu.count":               func(v any) string { return sHead + sBench + fmt.Sprintf("gpu: {count: %v}\n", v) },
	"container.network":       func(v any) string { return sHead + sBench + fmt.Sprintf("container: {network: %v}\n", v) },
	"container.ipc":           func(v any) string { return sHead + sBench + fmt.Sprintf("container: {ipc: %v}\n", v) },
	"container.ulimits.<key>": func(v any) string { return sHead + sBench + fmt.Sprintf("container: {ulimits: {%v: 1}}\n", v) },
	"benchmarks[].onFailure": func(v any) string {
		return sHead + fmt.Sprintf("benchmarks: [{name: b, command: [\"true\"], onFailure: %v}]\n", v)
	},
	"benchmarks[].figures[].parser": func(v any) string {
		return sHead + fmt.Sprintf("benchmarks: [{name: b, command: [\"true\"], figures: [{parser: %v}]}]\n", v)
	},
	"benchmarks[].figures[].better": func(v any) string {
		return sHead + fmt.Sprintf("benchmarks: [{name: b, command: [\"true\"], figures: [{metric: m, pattern: 'x (?P<value>\\d+)', better: %v}]}]\n", v)
	},
	"benchmarks[].launcher": func(v any) string {
		return sHead + fmt.Sprintf("benchmarks: [{name: b, command: [\"true\"], launcher: %v}]\n", v)
	},
	"launcher": func(v any) string { return sHead + sBench + fmt.Sprintf("launcher: %v\n", v) },
	"benchmarks[].image.pull": func(v any) string {
		return fmt.Sprintf("name: t\nbenchmarks: [{name: b, command: [\"true\"], image: {ref: busybox, pull: %v}}]\n", v)
	},
	"models.gpuVendor": func(v any) string {
		return sHead + fmt.Sprintf("models: {catalog: models.json, tags: [all], gpuVendor: %v}\n", v)
	},
	"distribution":     func(v any) string { return sHead + sBench + fmt.Sprintf("distribution: %v\n", v) },
	"engine":           func(v any) string { return sHead + sBench + fmt.Sprintf("engine: %v\n", v) },
	"runtime":          func(v any) string { return sHead + sBench + fmt.Sprintf("runtime: %v\n", v) },
	"experiment.order": func(v any) string { return sHead + sBench + fmt.Sprintf("experiment: {repeat: 2, order: %v}\n", v) },
	"metrics.*.better": func(v any) string { return sHead + sBench + fmt.Sprintf("metrics: {tps: {better: %v}}\n", v) },
	"telemetry":        func(v any) string { return sHead + sBench + fmt.Sprintf("telemetry: %v\n", v) },
}

// Every value of every enum in the schema is one that validate accepts, and a value outside
// it is refused by both. A new enum needs a manifest in enumManifests.
func TestSchemaEnumsAgreeWithTheDecoder(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root any
	json.Unmarshal(b, &root)
	enums := map[string][]any{}
	var walk func(path string, s any)
	walk = func(path string, s any) {
		m, ok := s.(map[string]any)
		if !ok {
			return
		}
		if e, ok := m["enum"].([]any); ok {
			enums[path] = append(enums[path], e...)
		}
		if ps, ok := m["properties"].(map[string]any); ok {
			for k, v := range ps {
				walk(document.Join(path, k), v)
			}
		}
		walk(path+"[]", m["items"])
		walk(path+".*", m["additionalProperties"])
		walk(path+".<key>", m["propertyNames"])
		if alts, ok := m["anyOf"].([]any); ok {
			for _, a := range alts {
				walk(path, a)
			}
		}
	}
	walk("", root)
	var paths []string
	for p := range enums {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var cases []schemaCase
	for _, p := range paths {
		mk, ok := enumManifests[p]
		if !ok {
			t.Errorf("the enum of %s has no manifest in enumManifests to check it with", p)
			continue
		}
		for _, v := range enums[p] {
			if v != nil {
				cases = append(cases, schemaCase{fmt.Sprintf("%s: %v", p, v), mk(v), true})
			}
		}
		cases = append(cases, schemaCase{p + ": bogus", mk("bogus"), false})
	}
	if len(paths) < 10 {
		t.Errorf("found only the enums %v", paths)
	}
	// Where validate's message for a bad value lists the allowed ones, they are the enum.
	allowedRE := regexp.MustCompile(`\(allowed: ([^;)]*)`)
	dir := t.TempDir()
	for _, p := range paths {
		mk, ok := enumManifests[p]
		if !ok {
			continue
		}
		_, _, err := Parse("m.yaml", filepath.Join(dir, "m.yaml"), []byte(mk("bogus")), Options{})
		m := allowedRE.FindStringSubmatch(fmt.Sprint(err))
		if m == nil {
			continue
		}
		var want []string
		for _, v := range enums[p] {
			if v != nil {
				want = append(want, fmt.Sprint(v))
			}
		}
		allowed := strings.Split(m[1], ", ")
		sort.Strings(allowed)
		sort.Strings(want)
		if strings.Join(allowed, ",") != strings.Join(want, ",") {
			t.Errorf("%s: validate allows %v, the schema %v", p, allowed, want)
		}
	}
	// models.gpuVendor is read case-insensitively, as madengine writes it.
	cases = append(cases, schemaCase{"models.gpuVendor: AMD", enumManifests["models.gpuVendor"]("AMD"), true})
	checkAgreement(t, cases)
}

// Each pattern means the same to Go's regexp and to ECMAScript's (editors): no flags, no
// \A, \z or named groups.
func TestSchemaPatternsArePortable(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"pattern": "((?:[^"\\]|\\.)*)"`)
	found := 0
	for _, m := range re.FindAllSubmatch(b, -1) {
		var p string
		if err := json.Unmarshal([]byte(`"`+string(m[1])+`"`), &p); err != nil {
			t.Fatal(err)
		}
		found++
		if _, err := regexp.Compile(p); err != nil {
			t.Errorf("pattern %q: %v", p, err)
		}
		for _, goOnly := range []string{"(?i", "(?s", "(?m", "(?P<", `\A`, `\z`} {
			if strings.Contains(p, goOnly) {
				t.Errorf("pattern %q uses %s, which ECMAScript does not have", p, goOnly)
			}
		}
	}
	if found < 5 {
		t.Errorf("found only %d patterns", found)
	}
}

// Every property of the schema, the nested ones of mounts and ulimits included, has a
// description (spec.go's doc comment, for a field of the manifest).
func TestSchemaDescribesEveryField(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root any
	json.Unmarshal(b, &root)
	var walk func(path string, s any)
	walk = func(path string, s any) {
		switch v := s.(type) {
		case []any:
			for _, it := range v {
				walk(path, it)
			}
		case map[string]any:
			if ps, ok := v["properties"].(map[string]any); ok {
				for k, p := range ps {
					if d, _ := p.(map[string]any)["description"].(string); strings.TrimSpace(d) == "" {
						t.Errorf("%s has no description", document.Join(path, k))
					}
					walk(document.Join(path, k), p)
				}
			}
			for k, sub := range v {
				if k != "properties" {
					walk(path, sub)
				}
			}
		}
	}
	walk("", root)
	for _, c := range []struct{ goName, jsonName, doc, want string }{
		{"Name", "name", "Name is the name.", "The name."},
		{"Tags", "tags", "Tags are labels.", "Labels."},
		{"LogScan", "logScan", "LogScan false turns it\noff.", "logScan false turns it off."},
		{"Env", "env", "Other text,\nwrapped.\n\nSecond  one.\n", "Other text, wrapped.\n\nSecond one."},
	} {
		if got := fieldDescription(c.goName, c.jsonName, c.doc); got != c.want {
			t.Errorf("fieldDescription(%q) = %q, want %q", c.doc, got, c.want)
		}
	}
}
