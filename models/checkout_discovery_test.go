package models

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

// fixtureCheckout is the MAD checkout the end-to-end tests run too: a models.json, a
// scripts/echo_dir/models.json and a data.json.
func fixtureCheckout(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../tests/fixtures/mad-discovery")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func names(ms []Model) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// A checkout's scripts/<dir>/models.json models join its models.json ones as madengine
// names them: <dir>/<name>, dockerfile and scripts under scripts/<dir>.
func TestDiscoverScriptsModels(t *testing.T) {
	dir := fixtureCheckout(t)
	c, err := LoadCheckoutCatalog(context.Background(), filepath.Join(dir, "models.json"), Discovery{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Models); !slices.Equal(got, []string{"root_echo", "echo_dir/echo_infer", "echo_dir/echo_other"}) {
		t.Fatalf("models %v", got)
	}
	m := c.Models[1]
	if m.Dockerfile != "scripts/echo_dir/docker/echo" || m.Scripts != "scripts/echo_dir/run.sh" || m.Scope != "echo_dir" ||
		m.File != filepath.Join(dir, "scripts/echo_dir/models.json") || m.Data != "fixture_data" || m.Line != 2 {
		t.Fatalf("%+v", m)
	}
	// A catalog not named models.json, or without scripts/ beside it, is the file alone.
	plain, err := LoadCheckoutCatalog(context.Background(), "../tests/fixtures/mad/models.json", Discovery{})
	if err != nil || len(plain.Models) != 3 {
		t.Fatalf("%v %v", plain, err)
	}
}

// Tags select as madengine's select_models does.
func TestSelectScopedTags(t *testing.T) {
	c, err := LoadCheckoutCatalog(context.Background(), filepath.Join(fixtureCheckout(t), "models.json"), Discovery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tags []string
		want []string
		warn string
	}{
		{[]string{"discovery"}, []string{"root_echo", "echo_dir/echo_infer"}, ""}, // a plain tag: every file
		{[]string{"echo_dir/echo_infer"}, []string{"echo_dir/echo_infer"}, ""},    // the full name
		{[]string{"echo_dir/all"}, []string{"echo_dir/echo_infer", "echo_dir/echo_other"}, ""},
		{[]string{"echo_dir/other"}, []string{"echo_dir/echo_other"}, ""}, // a tag, within the folder
		{[]string{"root_model/discovery"}, nil, "selects no model"},       // a folder without models
		{[]string{"all"}, []string{"root_echo", "echo_dir/echo_infer", "echo_dir/echo_other"}, ""},
		{[]string{"echo_dir:echo_infer"}, []string{"echo_dir/echo_infer"}, ""}, // the issue's <dir>:<name>
		{[]string{"echo_dir:other"}, []string{"echo_dir/echo_other"}, ""},      // <dir>:<tag>
		{[]string{"echo_dir:all"}, []string{"echo_dir/echo_infer", "echo_dir/echo_other"}, ""},
		{[]string{"echo_dir:nothing"}, nil, `scripts/echo_dir has no model or tag "nothing" (its models: echo_dir/echo_infer, echo_dir/echo_other)`},                            // no such model or tag there
		{[]string{"echo_dir:batch-size=32"}, nil, "madengine's extra args (<model>:<key>=<value>), which benchctl does not take: give them in the model's args in models.json"}, // madengine's extra args
		{[]string{"echo_infer:batch-size=32"}, nil, "madengine's extra args"},                                                                                                   // the same after a root model's name
		{[]string{"echo_dir:echo_infer", "echo_dir/echo_infer"}, []string{"echo_dir/echo_infer"}, ""},                                                                           // both forms: one model
		{[]string{"echo_infer"}, nil, "selects no model"},                                                                                                                       // the short name alone is not a name
	} {
		got, warns, err := c.Select(tc.tags, nil)
		if err != nil || !slices.Equal(names(got), tc.want) || (tc.warn == "") != (len(warns) == 0) ||
			tc.warn != "" && !strings.Contains(strings.Join(warns, "\n"), tc.warn) {
			t.Errorf("%v: %v %v %v", tc.tags, names(got), warns, err)
		}
	}
}

// The import makes each a benchmark whose name names files (<dir>_<name>), keeps the
// madengine name, runs the script from the checkout and builds the folder's Dockerfile.
func TestImportScriptsModels(t *testing.T) {
	dir := fixtureCheckout(t)
	bs, _, err := Importer(manifest.CatalogImport{Models: manifest.Models{Catalog: filepath.Join(dir, "models.json"), Tags: []string{"inference"}}, Vendor: "amd"})
	if err != nil || len(bs) != 1 {
		t.Fatalf("%v %v", bs, err)
	}
	b := bs[0]
	if b.Name != "echo_dir_echo_infer" || b.Model.Name != "echo_dir/echo_infer" || b.Workdir != Workspace+"/"+RunDirectory || b.Model.RunDir != "scripts/echo_dir" ||
		!slices.Equal(b.Command, []string{"bash", "run.sh", "--from", "echo_dir"}) ||
		b.Image == nil || b.Image.Dockerfile != filepath.Join(dir, "scripts/echo_dir/docker/echo.ubuntu.amd.Dockerfile") {
		t.Fatalf("%+v %+v", b, b.Image)
	}
}

// writeCheckout makes a checkout of files (path: content) in a temporary folder.
func writeCheckout(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const oneModel = `[{"name": "m", "scripts": "run.sh", "tags": ["t"]}]`

func TestDiscoverRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"both files", map[string]string{"models.json": "[]", "scripts/d/models.json": oneModel, "scripts/d/get_models_json.py": ""},
			"holds both models.json and get_models_json.py"},
		{"a benchmark name taken", map[string]string{"models.json": `[{"name": "d_m", "scripts": "x.sh"}]`, "scripts/d/models.json": oneModel},
			"the name d_m is taken by model d_m"},
		{"a folder name unusable", map[string]string{"models.json": "[]", "scripts/my dir/models.json": oneModel},
			`"my dir" is not usable in a model's name`},
		{"a broken sub-catalog", map[string]string{"models.json": "[]", "scripts/d/models.json": `[{"name": "m"}]`},
			"scripts/d/models.json:1: [0].scripts: is required"},
		{"a generator without the flag", map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": "raise SystemExit(1)"},
			"benchctl runs it (python3, with this checkout's code, on this machine) only when you say so: add --run-get-models-json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCheckout(t, tc.files)
			_, err := LoadCheckoutCatalog(context.Background(), filepath.Join(dir, "models.json"), Discovery{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

const generator = `from madengine.utils.discover_models import CustomModel

class Mine(CustomModel):
    def update_model(self):
        self.args = "--batch 8"

def list_models():
    print("generating")  # goes to stderr: stdout is the driver's
    return [CustomModel(name="g1", dockerfile="docker/g", scripts="run.sh", tags=["gen"]),
            Mine(name="g2", scripts="run.sh", tags=["gen", "mine"], n_gpus="2", timeout=60)]
`

// With the flag, get_models_json.py runs (without madengine installed) and its models
// join the catalog like a models.json's; what it prints is checked like one.
func TestGeneratedModels(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": generator})
	c, err := LoadCheckoutCatalog(context.Background(), filepath.Join(dir, "models.json"), Discovery{RunGenerators: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Models); !slices.Equal(got, []string{"gen/g1", "gen/g2"}) {
		t.Fatalf("%v", got)
	}
	g1, g2 := c.Models[0], c.Models[1]
	if g1.Dockerfile != "scripts/gen/docker/g" || g1.Scripts != "scripts/gen/run.sh" || g2.Args != "--batch 8" ||
		g2.NGPUs != "2" || g2.Timeout != 60 || g1.Timeout != 7200 || !slices.Equal(g2.Tags, []string{"gen", "mine"}) || len(c.Warnings) != 0 {
		t.Fatalf("%+v\n%+v\n%v", g1, g2, c.Warnings)
	}
	got, _, _ := c.Select([]string{"gen/mine"}, nil)
	if !slices.Equal(names(got), []string{"gen/g2"}) {
		t.Fatalf("%v", names(got))
	}
}

// A generator that misbehaves is refused, saying how; none hangs the load.
func TestGeneratorRefusals(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	for _, tc := range []struct{ name, script, want string }{
		{"no list_models", "x = 1\n", "defines no list_models function"},
		{"not CustomModel", "def list_models():\n    return [{'name': 'x'}]\n", "list_models returned a dict, not a CustomModel"},
		{"raises", "def list_models():\n    raise ValueError('no GPUs here')\n", "ValueError: no GPUs here"},
		{"writes to stdout itself", "import os\ndef list_models():\n    os.write(1, b'hello ')\n    return []\n", "invalid"},
		{"a bad entry", "from madengine.utils.discover_models import CustomModel\ndef list_models():\n    return [CustomModel(name='a b', scripts='x')]\n",
			`[0].name: "a b" is not usable as a benchmark name`},
		{"too much", "import os\ndef list_models():\n    os.write(1, b'[' + b' ' * (17 << 20))\n    return []\n", "printed more than 16 MiB"},
		{"hangs", "import time\ndef list_models():\n    print('thinking')\n    time.sleep(600)\n", "did not finish within 5s; what it printed last: thinking"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": tc.script})
			// The generator's timeout is the subject only where it hangs (5 s: time for a
			// python on a busy machine to start and say what it does); the others end by
			// themselves, and the default 2 minutes only catches a hang.
			d := Discovery{RunGenerators: true}
			if tc.name == "hangs" {
				d.GeneratorTimeout = 5 * time.Second
			}
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				_, err := LoadCheckoutCatalog(context.Background(), filepath.Join(dir, "models.json"), d)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(3 * time.Minute): // does not hang: the generator's timeout ends it before
				t.Fatalf("the load still runs after %s", time.Since(start).Round(time.Second))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}
