package starter

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func TestStarterValidates(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docker"), 0o755)
	os.WriteFile(filepath.Join(dir, "docker", "train${HOME}.Dockerfile"), []byte("FROM scratch\n"), 0o644)
	text, err := Render(Options{Name: manifest.SuggestName("My Bench!"), Dockerfile: "docker/train${HOME}.Dockerfile"})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "benchmark.yaml")
	os.WriteFile(p, []byte(text), 0o644)
	m, _, err := manifest.Load(p, manifest.Options{})
	if err != nil {
		t.Fatalf("the starter does not validate: %v\n%s", err, text)
	}
	if m.Name != "my-bench" || len(m.Benchmarks) != 1 || filepath.Base(m.Image.Dockerfile) != "train${HOME}.Dockerfile" {
		t.Fatalf("%+v", m)
	}
	if _, err := Render(Options{Name: "Bad Name"}); err == nil {
		t.Error("bad name accepted")
	}
}

// A name YAML would read as a number, a boolean or null stays a string.
func TestStarterQuotesTheName(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	for _, name := range []string{"001", "2024", "true", "null", "1e3", "1.5"} {
		text, err := Render(Options{Name: name, Dockerfile: "Dockerfile"})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "benchmark.yaml")
		os.WriteFile(p, []byte(text), 0o644)
		if m, _, err := manifest.Load(p, manifest.Options{}); err != nil || m.Name != name {
			t.Errorf("name %s: %v", name, err)
		}
	}
}

// A starter for a prebuilt image, and one whose command is the program a FROM scratch image
// holds: both validate as written, and say what they were given.
func TestStarterImageAndCommand(t *testing.T) {
	for _, o := range []Options{
		{Name: "pt", Image: "rocm/pytorch:6.4"},
		{Name: "ar", Dockerfile: "Dockerfile", Command: []string{"/allreduce", "$x"}, CommandNote: "the program the Dockerfile copies"},
	} {
		text, err := Render(o)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
		p := filepath.Join(dir, "benchmark.yaml")
		os.WriteFile(p, []byte(text), 0o644)
		m, _, err := manifest.Load(p, manifest.Options{})
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if o.Image != "" && (m.Image.Ref != o.Image || m.Image.Dockerfile != "" || strings.Join(m.Benchmarks[0].Command, " ") != "sh -c echo performance: 1 samples_per_second") {
			t.Fatalf("%+v %v", m.Image, m.Benchmarks[0].Command)
		}
		if o.Command != nil && (strings.Join(m.Benchmarks[0].Command, " ") != "/allreduce $x" || o.Command[1] != "$x" || !strings.Contains(text, `command: ["/allreduce", "$x"]   # the program the Dockerfile copies`)) {
			t.Fatalf("%v\n%s", m.Benchmarks[0].Command, text)
		}
	}
}
