package models

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

func TestLoadMADCatalog(t *testing.T) {
	c, err := Load("testdata/mad_models.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 3 {
		t.Fatalf("models = %d", len(c.Models))
	}
	v := c.Models[1]
	if !reflect.DeepEqual(v.Tags, []string{"pyt", "vllm", "inference"}) || v.Timeout != 7200 || v.NGPUs != "8" ||
		!reflect.DeepEqual(v.SkipGPUArch, []string{"gfx90a"}) || v.Data != "huggingface" || v.Extra != nil {
		t.Errorf("vllm entry = %+v", v)
	}
	if len(c.Warnings) != 0 { // data is madengine's data key (read by the import, with data.json)
		t.Errorf("warnings = %q", c.Warnings)
	}
}

func TestSelect(t *testing.T) {
	c, err := Load("testdata/mad_models.json")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ms []Model) (out []string) {
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return
	}
	cases := []struct {
		tags, names, want []string
		warn              bool
	}{
		{[]string{"training"}, nil, []string{"pyt_huggingface_gpt2", "tf_resnet50"}, false},
		{[]string{"vllm"}, nil, []string{"pyt_vllm_llama-3.1-8b"}, false},
		{[]string{"all"}, nil, []string{"pyt_huggingface_gpt2", "pyt_vllm_llama-3.1-8b", "tf_resnet50"}, false},
		{[]string{"tf_resnet50"}, nil, []string{"tf_resnet50"}, false}, // a model name works as a tag
		{nil, []string{"tf_resnet50"}, []string{"tf_resnet50"}, false},
		{[]string{"nope"}, nil, nil, true},
	}
	for _, tc := range cases {
		got, warns, err := c.Select(tc.tags, tc.names)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(names(got), tc.want) || (len(warns) > 0) != tc.warn {
			t.Errorf("Select(%v, %v) = %v, %v", tc.tags, tc.names, names(got), warns)
		}
	}
	if _, _, err := c.Select(nil, []string{"missing"}); err == nil {
		t.Error("unknown name accepted")
	}
}

func TestCommand(t *testing.T) {
	cases := []struct {
		scripts, args string
		want          []string
	}{
		// In the run directory, a copy of the script's folder, as madengine runs them.
		{"scripts/x/run.sh", "--batch-size 32 --model 'gpt2 large'", []string{"bash", "run.sh", "--batch-size", "32", "--model", "gpt2 large"}},
		{"scripts/x/train.py", `--name "a b" --x=\$HOME`, []string{"python3", "train.py", "--name", "a b", "--x=$HOME"}},
		{"scripts/vllm", "", []string{"bash", "run.sh"}},
		{"scripts/vllm/", "", []string{"bash", "run.sh"}},
		{"./run.sh", "", []string{"bash", "run.sh"}},
		{"/dummy", "--rows 3", []string{"/dummy", "--rows", "3"}},
	}
	for _, c := range cases {
		got, err := Model{Scripts: c.scripts, Args: c.args}.Command()
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Command(%q, %q) = %q, %v; want %q", c.scripts, c.args, got, err, c.want)
		}
	}
	if _, err := (Model{Scripts: "a.sh", Args: "'open"}).Command(); err == nil {
		t.Error("unclosed quote accepted")
	}
}

func TestBadCatalogs(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"not a list":       {`{"name": "x"}`, "a catalog must be a JSON list"},
		"syntax":           {"[\n{\"name\": \"x\",}\n]", "invalid JSON"},
		"no name":          {"[\n{\"scripts\": \"a.sh\"}\n]", ":2: [0].name: is required"},
		"bad tags":         {"[\n{\"name\": \"x\", \"scripts\": \"a.sh\",\n \"tags\": {\"a\": 1}}\n]", ":3: [0].tags: must be a list"},
		"bad timeout":      {"[{\"name\": \"x\", \"scripts\": \"a.sh\", \"timeout\": \"soon\"}]", "[0].timeout: must be a number of seconds"},
		"bad n_gpus":       {"[{\"name\": \"x\", \"scripts\": \"a.sh\", \"n_gpus\": \"eight\"}]", "[0].n_gpus: \"eight\" is not a GPU count"},
		"duplicate":        {"[{\"name\": \"x\", \"scripts\": \"a.sh\"},\n{\"name\": \"x\", \"scripts\": \"b.sh\"}]", ":2: [1].name: \"x\" is already the name of model [0]"},
		"bad name":         {"[{\"name\": \"my model\", \"scripts\": \"a.sh\"}]", "is not usable as a benchmark name"},
		"no scripts":       {"[{\"name\": \"x\"}]", "[0].scripts: is required"},
		"empty":            {"", "the document is empty"},
		"huge timeout":     {"[{\"name\": \"x\", \"scripts\": \"a.sh\", \"timeout\": 10000000000}]", "[0].timeout: must be a number of seconds up to a year"},
		"results outside":  {"[{\"name\": \"x\", \"scripts\": \"a.sh\", \"multiple_results\": \"../../etc/x.csv\"}]", "[0].multiple_results: \"../../etc/x.csv\" must be a file name relative to the output folder"},
		"absolute results": {"[{\"name\": \"x\", \"scripts\": \"a.sh\", \"multiple_results\": \"/abs/x.csv\"}]", "[0].multiple_results: \"/abs/x.csv\" must be"},
		"tag with blank":   {"[{\"name\": \"x\", \"scripts\": \"a.sh\", \"tags\": [\"y z\"]}]", "[0].tags[0]: \"y z\" is not a tag"},
	}
	for name, c := range cases {
		p := filepath.Join(t.TempDir(), "models.json")
		os.WriteFile(p, []byte(c.body), 0o644)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error = %v, want %q", name, err, c.want)
		}
	}
}

func TestManifestImportsCatalog(t *testing.T) {
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/mad_models.json")
	os.MkdirAll(filepath.Join(dir, "MAD"), 0o755)
	os.WriteFile(filepath.Join(dir, "MAD", "models.json"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: mad\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: own, command: [x]}]\nmodels: {catalog: MAD/models.json, tags: [vllm, training]}\n"), 0o644)
	m, warns, err := LoadManifest(mf, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range m.Benchmarks {
		got = append(got, b.Name)
	}
	if !reflect.DeepEqual(got, []string{"own", "pyt_huggingface_gpt2", "pyt_vllm_llama-3.1-8b", "tf_resnet50"}) {
		t.Fatalf("benchmarks = %v", got)
	}
	vllm := m.Benchmarks[2]
	if vllm.Timeout != manifest.Duration(2*time.Hour) || vllm.Results != "perf_Llama-3.1-8B.csv" || vllm.Model == nil || vllm.Model.NGPUs != "8" {
		t.Errorf("vllm = %+v", vllm)
	}
	if m.Benchmarks[1].Timeout != manifest.Duration(manifest.DefaultTimeout) {
		t.Errorf("timeout -1 did not mean the default: %v", m.Benchmarks[1].Timeout)
	}
	if len(warns) == 0 {
		t.Error("the unknown catalog key was not warned about")
	}

	// A name clash between the manifest and the catalog is an error.
	os.WriteFile(mf, []byte("name: mad\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: tf_resnet50, command: [x]}]\nmodels: {catalog: MAD/models.json, tags: [all]}\n"), 0o644)
	if _, _, err := LoadManifest(mf, nil); err == nil || !strings.Contains(err.Error(), "same name") {
		t.Errorf("clash: %v", err)
	}
	// A catalog problem is reported with the catalog's file and line.
	os.WriteFile(filepath.Join(dir, "MAD", "models.json"), []byte("[\n{\"name\": \"x\"}\n]"), 0o644)
	if _, _, err := LoadManifest(mf, nil); err == nil || !strings.Contains(err.Error(), "models.json:2: [0].scripts: is required") {
		t.Errorf("catalog problem: %v", err)
	}
}

// madengine's per-model log_error_pattern_scan: false turns the scan off for that model;
// anything but a boolean is an error with its line.
func TestLogErrorPatternScanKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "models.json")
	os.WriteFile(p, []byte(`[
 {"name": "a", "scripts": "run.sh", "tags": ["x"], "log_error_pattern_scan": false},
 {"name": "b", "scripts": "run.sh", "tags": ["x"], "log_error_pattern_scan": true},
 {"name": "c", "scripts": "run.sh", "tags": ["x"]}
]`), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false} {
		b, err := c.Models[i].Benchmark(p)
		if err != nil || b.NoLogScan != want {
			t.Errorf("%s: NoLogScan %v, want %v (%v)", c.Models[i].Name, b.NoLogScan, want, err)
		}
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	os.WriteFile(p, []byte(`[
 {"name": "a", "scripts": "run.sh", "log_error_pattern_scan": "sometimes"}
]`), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), `:2: `) || !strings.Contains(err.Error(), `must be true or false, got "sometimes"`) {
		t.Fatalf("a bad value: %v", err)
	}
}

// madengine's per-model log_error_patterns (replacing the defaults) and
// log_error_benign_patterns reach the benchmark; a comma string, an empty list of errors, a
// blank or multi-line pattern and a 5,000-byte one are errors with their line.
func TestLogErrorPatternKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "models.json")
	os.WriteFile(p, []byte(`[
 {"name": "a", "scripts": "run.sh", "log_error_patterns": ["NCCL WARN, fatal", "died"], "log_error_benign_patterns": ["RuntimeError: expected"]}
]`), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Models[0].Benchmark(p)
	if strings.Join(b.LogErrors, "|") != "NCCL WARN, fatal|died" || strings.Join(b.LogBenign, "|") != "RuntimeError: expected" || len(c.Warnings) != 0 {
		t.Errorf("errors %q benign %q warnings %q", b.LogErrors, b.LogBenign, c.Warnings)
	}
	for body, want := range map[string]string{
		`"log_error_patterns": "a,b"`:                                 "log_error_patterns: must be a list of strings",
		`"log_error_patterns": []`:                                    "log_error_patterns: is empty: it replaces the default error patterns",
		`"log_error_benign_patterns": ["ok", " "]`:                    "log_error_benign_patterns: item 1 is not a pattern",
		`"log_error_benign_patterns": ["two\nlines"]`:                 "item 0 is not a pattern",
		`"log_error_patterns": ["` + strings.Repeat("x", 5000) + `"]`: "item 0 is 5000 bytes long: a pattern is at most 4096",
	} {
		os.WriteFile(p, []byte("[\n {\"name\": \"a\", \"scripts\": \"run.sh\", "+body+"}\n]"), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), ":2: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v", body, err)
		}
	}
}

// A MAD model's additional_docker_run_options give it its own container settings, env and
// mounts (the manifest's, with the model's flags merged in and checked); a flag benchctl
// does not take is an error naming the model and its catalog line.
func TestModelRunOptions(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	write := func(opts string) string {
		os.WriteFile(filepath.Join(dir, "models.json"), []byte(`[
 {"name": "plain", "scripts": "run.sh", "tags": ["x"]},
 {"name": "tuned", "scripts": "run.sh", "tags": ["x"], "additional_docker_run_options": `+opts+`}
]`), 0o644)
		mf := filepath.Join(dir, "m.yaml")
		os.WriteFile(mf, []byte("name: mad\nimage: {dockerfile: Dockerfile}\ncontainer: {capAdd: [IPC_LOCK]}\nenv: {A: a}\nmodels: {catalog: models.json, tags: [x]}\n"), 0o644)
		return mf
	}
	m, warns, err := LoadManifest(write(`"--shm-size 64G --cap-add SYS_PTRACE --security-opt seccomp=unconfined -e NCCL_DEBUG=INFO -v /data:/data:ro"`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		if strings.Contains(w, "additional_docker_run_options") {
			t.Errorf("warned: %s", w)
		}
	}
	plain, tuned := m.Benchmarks[0], m.Benchmarks[1]
	if plain.Container != nil || plain.Mounts != nil {
		t.Errorf("plain got its own settings: %+v", plain)
	}
	c := tuned.Container
	if c == nil || c.ShmSize != 64<<30 || !reflect.DeepEqual(c.CapAdd, []string{"IPC_LOCK", "SYS_PTRACE"}) || !reflect.DeepEqual(c.SecurityOpt, []string{"seccomp=unconfined"}) {
		t.Fatalf("tuned container %+v", c)
	}
	if len(tuned.Mounts) != 1 || tuned.Mounts[0].Target != "/data" || len(tuned.Env) != 1 || tuned.Env[0].Name != "NCCL_DEBUG" {
		t.Fatalf("tuned mounts %+v env %+v", tuned.Mounts, tuned.Env)
	}
	if !reflect.DeepEqual(m.Container.CapAdd, []string{"IPC_LOCK"}) || len(m.Mounts) != 0 {
		t.Fatalf("the manifest's own settings changed: %+v %+v", m.Container, m.Mounts)
	}
	for opts, want := range map[string]string{
		`"--privileged"`:  "models: tuned (",
		`"-e A=b"`:        `sets A="b", but env sets A="a"`,
		`"--ipc 'host"`:   "unclosed single quote",
		`"--ulimit nope"`: "is not a ulimit",
	} {
		if _, _, err := LoadManifest(write(opts), nil); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "additional_docker_run_options") {
			t.Errorf("%s: %v, want %q", opts, err, want)
		}
	}
}
