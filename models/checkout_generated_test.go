package models

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
}

func loadGenerated(t *testing.T, dir string, timeout time.Duration) (*Catalog, error) {
	t.Helper()
	return LoadCheckoutCatalog(context.Background(), filepath.Join(dir, "models.json"), Discovery{RunGenerators: true, GeneratorTimeout: timeout})
}

// The checkout's own files do not shadow the standard library: only get_models_json.py
// (and what sits beside it, as when python3 runs the file) is the checkout's code that runs.
func TestGeneratorDoesNotImportTheCheckoutRoot(t *testing.T) {
	needPython(t)
	dir := writeCheckout(t, map[string]string{
		"models.json":                    "[]",
		"json.py":                        "raise SystemExit('the checkout json.py ran')\n",
		"dataclasses.py":                 "raise SystemExit('the checkout dataclasses.py ran')\n",
		"scripts/gen/helper.py":          "NAME = 'from-helper'\n",
		"scripts/gen/get_models_json.py": "import helper, typing\nfrom madengine.utils.discover_models import CustomModel\ndef list_models():\n    return [CustomModel(name=helper.NAME, scripts='run.sh')]\n",
	})
	c, err := loadGenerated(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Models); !slices.Equal(got, []string{"gen/from-helper"}) {
		t.Fatalf("%v", got)
	}
}

// A generator that times out is killed with every process it started: none is left running.
func TestGeneratorTimeoutKillsItsChildren(t *testing.T) {
	needPython(t)
	dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": `import os, subprocess, time
def list_models():
    p = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.pid"), "w") as f:
        f.write(str(p.pid))
    time.sleep(300)
`})
	if _, err := loadGenerated(t, dir, 2*time.Second); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("%v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "scripts/gen/child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); alive(pid); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the generator's child %d survived its timeout", pid)
		}
	}
}

// alive says whether pid runs (a zombie, killed but not yet reaped, does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// The generator gets no benchctl or MAD secrets, nor anything credential-like, but what a
// Python program needs (PATH, HOME, LANG, PYTHON*).
func TestGeneratorEnvironment(t *testing.T) {
	needPython(t)
	t.Setenv("BENCHCTL_JOB_SECRET", "s3cret")
	t.Setenv("BENCHCTL_TESTBED_ENV", "x")
	t.Setenv("MAD_SECRETS_HFTOKEN", "hf_x")
	t.Setenv("MY_API_TOKEN", "t")
	t.Setenv("SOME_UNRELATED", "x")
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("HOME", "/nonexistent-home")
	dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": `import os
from madengine.utils.discover_models import CustomModel
def list_models():
    return [CustomModel(name="e", scripts="run.sh", args=" ".join(sorted(os.environ)))]
`})
	c, err := loadGenerated(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Fields(c.Models[0].Args)
	for _, k := range []string{"BENCHCTL_JOB_SECRET", "BENCHCTL_TESTBED_ENV", "MAD_SECRETS_HFTOKEN", "MY_API_TOKEN", "SOME_UNRELATED"} {
		if slices.Contains(env, k) {
			t.Errorf("the generator got %s", k)
		}
	}
	for _, k := range []string{"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE"} {
		if !slices.Contains(env, k) {
			t.Errorf("the generator did not get %s: %v", k, env)
		}
	}
}

// A failing generator's error quotes the end of what it wrote (the traceback's last
// line), however much came before.
func TestGeneratorErrorQuotesTheTail(t *testing.T) {
	needPython(t)
	dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": `import sys
def list_models():
    for i in range(20000):
        print("progress line", i, "x" * 40)
    raise ValueError("the last words")
`})
	_, err := loadGenerated(t, dir, 0)
	if err == nil || !strings.Contains(err.Error(), "ValueError: the last words") {
		t.Fatalf("%v", err)
	}
}

// One process runs a generator once, however often the catalog loads (CheckoutManifest
// loads it to check the vendor, then imports it); a changed generator runs again.
func TestGeneratorRunsOncePerProcess(t *testing.T) {
	needPython(t)
	script := `import os
from madengine.utils.discover_models import CustomModel
def list_models():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs"), "a") as f:
        f.write("x")
    return [CustomModel(name="m", scripts="run.sh")]
`
	dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": script})
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "scripts/gen/runs"))
		return len(b)
	}
	for range 3 {
		c, err := loadGenerated(t, dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Models[0].Name = "changed by a caller"
	}
	c, err := loadGenerated(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := runs(); n != 1 || c.Models[0].Name != "gen/m" {
		t.Fatalf("ran %d times; %v", n, names(c.Models))
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts/gen/get_models_json.py"), []byte(script+"# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadGenerated(t, dir, 0); err != nil || runs() != 2 {
		t.Fatalf("%v; ran %d times", err, runs())
	}

	// Loads at the same time share one run too.
	dir = writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": script + "# at once\n"})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := loadGenerated(t, dir, 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := runs(); n != 1 {
		t.Fatalf("4 loads at once ran it %d times", n)
	}
}

// A load cancelled by its caller while the generator runs is not kept: the next load runs
// it again, and a load waiting on the cancelled one does not hang.
func TestGeneratorCancelledRunIsNotKept(t *testing.T) {
	needPython(t)
	dir := writeCheckout(t, map[string]string{"models.json": "[]", "scripts/gen/get_models_json.py": `import os, time
from madengine.utils.discover_models import CustomModel
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow")
def list_models():
    if not os.path.exists(marker):
        open(marker, "w").close()
        time.sleep(300)
    return [CustomModel(name="m", scripts="run.sh")]
`})
	// The caller's deadline ends the load once the generator runs (it has made its marker):
	// cancelled with DeadlineExceeded as its cause, as a deadline would, but not before.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		marker := filepath.Join(dir, "scripts", "gen", "slow")
		for until := time.Now().Add(2 * time.Minute); time.Now().Before(until) && ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				break
			}
		}
		cancel(context.DeadlineExceeded)
	}()
	if _, err := LoadCheckoutCatalog(ctx, filepath.Join(dir, "models.json"), Discovery{RunGenerators: true}); err == nil ||
		strings.Contains(err.Error(), "did not finish within") || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("a cancelled load: %v", err) // the caller's deadline, not the generator's timeout
	}
	c, err := loadGenerated(t, dir, 0)
	if err != nil || len(c.Models) != 1 {
		t.Fatalf("%v", err)
	}
}
