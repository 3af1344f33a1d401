package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStarterValidates(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docker"), 0o755)
	os.WriteFile(filepath.Join(dir, "docker", "train.Dockerfile"), []byte("FROM scratch\n"), 0o644)
	text, err := Starter(StarterOptions{Name: SuggestName("My Bench!"), Dockerfile: "docker/train.Dockerfile"})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "benchmark.yaml")
	os.WriteFile(p, []byte(text), 0o644)
	m, _, err := Load(p, Options{})
	if err != nil {
		t.Fatalf("the starter does not validate: %v\n%s", err, text)
	}
	if m.Name != "my-bench" || len(m.Benchmarks) != 1 {
		t.Fatalf("%+v", m)
	}
	if _, err := Starter(StarterOptions{Name: "Bad Name"}); err == nil {
		t.Error("bad name accepted")
	}
}
