package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
)

// cache ls -o json on an empty cache (never created, or created and empty) prints [], and
// an entry without tags has "tags": [].
func TestCacheLsJSONEmpty(t *testing.T) {
	shared := t.TempDir()
	if code, out, errs := run(t, "cache", "ls", "--shared-dir", shared, "-o", "json"); code != 0 || out != "[]\n" {
		t.Fatalf("no cache folder: exit %d, %q, stderr %s", code, out, errs)
	}
	if err := os.MkdirAll(image.CacheLayout{Shared: shared}.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "cache", "ls", "--shared-dir", shared, "-o", "json"); code != 0 || out != "[]\n" {
		t.Fatalf("an empty cache folder: exit %d, %q, stderr %s", code, out, errs)
	}
	publish(t, shared, 1)
	code, out, errs := run(t, "cache", "ls", "--shared-dir", shared, "-o", "json")
	if code != 0 || !strings.Contains(out, `"tags": [],`) {
		t.Fatalf("an entry without tags: exit %d\n%s%s", code, out, errs)
	}
}

// The other lists: models list that selects nothing, gpus --json on a machine without GPUs.
func TestOtherJSONListsEmpty(t *testing.T) {
	code, out, errs := run(t, "models", "list", "--catalog", "../../tests/fixtures/mad/models.json", "--tags", "no-such-tag", "-o", "json")
	if code != 0 || out != "[]\n" {
		t.Errorf("models list selecting nothing: exit %d, %q\n%s", code, out, errs)
	}
	none := func(context.Context, gpu.Options) (gpu.Inventory, error) { return gpu.Inventory{Vendor: "none"}, nil }
	out, _, err := runGpus(t, none, "-o", "json")
	if err != nil || !strings.Contains(out, `"gpus": [],`) {
		t.Errorf("gpus --json without GPUs: %v\n%s", err, out)
	}
}

// Every list command prints exactly [] (or an object whose list is []) for -o json when
// there is nothing to list.
func TestJSONOfEmptyListsExactly(t *testing.T) {
	shared := t.TempDir()
	csv := filepath.Join(t.TempDir(), "empty.csv")
	if err := os.WriteFile(csv, []byte("model,metric,performance\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cache", "ls", "--shared-dir", shared, "-o", "json"}, "[]\n"},
		{[]string{"cache", "verify", "--shared-dir", shared, "-o", "json"}, "[]\n"},
		{[]string{"cache", "prune", "--shared-dir", shared, "--keep", "0", "-o", "json"}, "[]\n"},
		{[]string{"cache", "prune", "--shared-dir", shared, "--dry-run", "-o", "json"}, "[]\n"},
		{[]string{"models", "list", "--catalog", "../../tests/fixtures/mad/models.json", "--tags", "no-such-tag", "-o", "json"}, "[]\n"},
		{[]string{"compare", csv, csv, "-o", "json"}, "{\n  \"threshold\": 5,\n  \"changes\": []\n}\n"},
	} {
		code, out, errs := run(t, c.args...)
		if code != 0 || out != c.want {
			t.Errorf("%v: exit %d\n got %q\nwant %q\n%s", c.args, code, out, c.want, errs)
		}
	}
	none := func(context.Context, gpu.Options) (gpu.Inventory, error) { return gpu.Inventory{Vendor: "none"}, nil }
	out, _, err := runGpus(t, none, "-o", "json")
	host, _ := os.Hostname() // every document names its host
	if want := "{\n  \"host\": " + jsonString(host) + ",\n  \"vendor\": \"none\",\n  \"gpus\": [],\n  \"driver\": \"\",\n  \"runtime\": \"\",\n  \"source\": \"\"\n}\n"; err != nil || out != want {
		t.Errorf("gpus -o json without GPUs: %v\n got %q\nwant %q", err, out, want)
	}
}
