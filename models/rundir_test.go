package models

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// The forms of scripts madengine runs, each in a copy of its folder: a .sh with bash, a
// .py with python3, a folder's run.sh; an absolute path is a program of the image, run
// without a copy.
func TestScriptForms(t *testing.T) {
	for _, c := range []struct {
		scripts string
		want    ScriptForm
	}{
		{"scripts/vllm/run.sh", ScriptForm{Dir: "scripts/vllm", Command: []string{"bash", "run.sh"}}},
		{"scripts/pytorch_train/pytorch_benchmark.sh", ScriptForm{Dir: "scripts/pytorch_train", Command: []string{"bash", "pytorch_benchmark.sh"}}},
		{"scripts/x/train.py", ScriptForm{Dir: "scripts/x", Command: []string{"python3", "train.py"}}},
		{"scripts/vllm", ScriptForm{Dir: "scripts/vllm", Command: []string{"bash", "run.sh"}}},
		{"scripts/./vllm//", ScriptForm{Dir: "scripts/vllm", Command: []string{"bash", "run.sh"}}},
		{"run.sh", ScriptForm{Dir: ".", Command: []string{"bash", "run.sh"}}},
		{"/dummy", ScriptForm{Command: []string{"/dummy"}}},
	} {
		got, err := Form(c.scripts)
		if err != nil || got.Dir != c.want.Dir || !slices.Equal(got.Command, c.want.Command) {
			t.Errorf("Form(%q) = %+v, %v; want %+v", c.scripts, got, err, c.want)
		}
	}
	for _, bad := range []string{"../other/run.sh", "scripts/../../x", "..", "  "} {
		if _, err := Form(bad); err == nil {
			t.Errorf("Form(%q) accepted", bad)
		}
	}
}

// importScripts imports the one model m of a checkout whose files are given, with extra
// set-up of the checkout's folder.
func importScripts(t *testing.T, scripts string, files map[string]string, setup func(dir string)) ([]manifest.Benchmark, []string, error) {
	t.Helper()
	files["models.json"] = `[{"name": "m", "scripts": "` + scripts + `", "tags": ["t"]}]`
	dir := writeCheckout(t, files)
	if setup != nil {
		setup(dir)
	}
	return Importer(manifest.CatalogImport{Models: manifest.Models{Catalog: filepath.Join(dir, "models.json"), Tags: []string{"t"}}, Vendor: "none"})
}

// Each bad script folder is a clear error naming the model and its catalog line, invalid
// input (exit 4), found when the catalog is loaded, before any node runs.
func TestBadScriptFoldersAreRefusedAtLoad(t *testing.T) {
	outside := t.TempDir()
	run := map[string]string{"scripts/x/run.sh": "#!/bin/bash\n"}
	for _, c := range []struct {
		name    string
		scripts string
		setup   func(dir string)
		want    string
	}{
		{"a path out of the checkout", "../elsewhere/run.sh", nil, `m: scripts "../elsewhere/run.sh" leads out of the checkout`},
		{"a 6,000-character path out of the checkout", "../" + strings.Repeat("x", 6000), nil, `leads out of the checkout`},
		{"a folder that is a link out", "scripts/away", func(dir string) { os.Symlink(outside, filepath.Join(dir, "scripts", "away")) }, "leads out of the checkout"},
		{"a link out in the folder", "scripts/x/run.sh", func(dir string) { os.Symlink("/etc/passwd", filepath.Join(dir, "scripts/x/pw")) }, "scripts/x/pw: leads out of the checkout"},
		{"a FIFO in the folder", "scripts/x", func(dir string) { syscall.Mkfifo(filepath.Join(dir, "scripts/x/fifo"), 0o644) }, "scripts/x/fifo: is a FIFO (named pipe)"},
		{"a folder over the entries bound", "scripts/x/run.sh", func(dir string) {
			big := filepath.Join(dir, "scripts/x/many")
			os.MkdirAll(big, 0o755)
			for i := range 100_001 {
				f, _ := os.Create(filepath.Join(big, "f"+strconv.Itoa(i)))
				f.Close()
			}
		}, "holds more than 100000 files and folders"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := importScripts(t, c.scripts, clone(run), c.setup)
			var me *document.Error
			if !errors.As(err, &me) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "models.json:1: m") {
				t.Fatalf("got %v, want a catalog problem at models.json:1 for m containing %q", err, c.want)
			}
		})
	}
}

// A script folder that is not there yet is a warning, not an error: madengine finds out
// when the model runs, and so does benchctl.
func TestAMissingScriptIsAWarning(t *testing.T) {
	bs, warns, err := importScripts(t, "scripts/nowhere/run.sh", map[string]string{}, nil)
	if err != nil || len(bs) != 1 || len(warns) != 1 || !strings.Contains(warns[0], `scripts "scripts/nowhere/run.sh": the folder "scripts/nowhere" is not in the checkout`) || !strings.Contains(warns[0], "will fail when it runs") {
		t.Fatalf("%v %q %v", bs, warns, err)
	}
	bs, warns, err = importScripts(t, "scripts/x/other.sh", map[string]string{"scripts/x/run.sh": ""}, nil)
	if err != nil || len(bs) != 1 || len(warns) != 1 || !strings.Contains(warns[0], `other.sh" is not in the checkout`) {
		t.Fatalf("%v %q %v", bs, warns, err)
	}
}

func clone(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A 6,000-character scripts value or url is reported in a message of readable length.
func TestLongValuesAreClippedInMessages(t *testing.T) {
	long := "../" + strings.Repeat("y", 6000)
	_, _, err := importScripts(t, long, map[string]string{}, nil)
	if err == nil || len(err.Error()) > 1000 {
		t.Errorf("%d bytes: %.300v", len(err.Error()), err)
	}
	_, _, err = importScripts(t, "scripts/"+strings.Repeat("z", 6000)+"/run.sh", map[string]string{}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot be read: file name too long") || len(err.Error()) > 1000 {
		t.Errorf("a folder name too long: %.300v", err)
	}
	dir := writeCheckout(t, map[string]string{"models.json": `[{"name": "m", "scripts": "run.sh", "url": "-` + strings.Repeat("u", 6000) + `", "tags": ["t"]}]`, "run.sh": ""})
	_, _, err = Importer(manifest.CatalogImport{Models: manifest.Models{Catalog: filepath.Join(dir, "models.json"), Tags: []string{"t"}}, Vendor: "none"})
	if err == nil || !strings.Contains(err.Error(), "models.json:1: [0].url: url") || len(err.Error()) > 1000 {
		t.Errorf("a bad url: %.300v", err)
	}
}
