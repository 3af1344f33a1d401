package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
)

// A list printed as JSON is [] when empty, at the top and inside objects; what is not a
// list, or says itself how it marshals, is left alone.
func TestWriteJSONEmptyLists(t *testing.T) {
	type inner struct {
		Tags []string `json:"tags"`
	}
	type outer struct {
		Items   []inner          `json:"items"`
		Ptr     *inner           `json:"ptr"`
		NilPtr  *inner           `json:"nilPtr"`
		Arr     [1]inner         `json:"arr"`
		Bytes   []byte           `json:"bytes"`
		Raw     json.RawMessage  `json:"raw"`
		Map     map[string][]int `json:"map"`
		Omitted []int            `json:"omitted,omitempty"`
		When    time.Time        `json:"when"`
		hidden  []int
	}
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"nil list", []string(nil), `[]`},
		{"nil list of structs", []inner(nil), `[]`},
		{"pointer to a nil list", new([]int), `[]`},
		{"list", []inner{{}, {Tags: []string{"a"}}}, `[{"tags":[]},{"tags":["a"]}]`},
		{"nil interface", nil, `null`},
		{"object", outer{Items: []inner{{}}, Ptr: &inner{}, Map: map[string][]int{"k": nil}, hidden: nil},
			`{"items":[{"tags":[]}],"ptr":{"tags":[]},"nilPtr":null,"arr":[{"tags":[]}],"bytes":null,"raw":null,"map":{"k":null},"when":"0001-01-01T00:00:00Z"}`},
	} {
		var b bytes.Buffer
		if err := writeJSON(&b, c.v); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var compact bytes.Buffer
		json.Compact(&compact, b.Bytes())
		if compact.String() != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, compact.String(), c.want)
		}
	}
	// Indented, one value, a newline at the end, as the commands printed before.
	var b bytes.Buffer
	writeJSON(&b, []inner{{Tags: []string{"a"}}})
	if want := "[\n  {\n    \"tags\": [\n      \"a\"\n    ]\n  }\n]\n"; b.String() != want {
		t.Errorf("layout %q, want %q", b.String(), want)
	}
}

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
