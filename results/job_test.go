package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

// job.json is written by the runner from a redacted manifest.Manifest: it must decode.
func TestReadJobFromRunnerManifest(t *testing.T) {
	for _, count := range []manifest.Count{0, 8} {
		m := &manifest.Manifest{Name: "m", Image: manifest.Image{Dockerfile: "/x/Dockerfile", Tag: "t:1"},
			GPU: manifest.GPU{Vendor: "amd", Count: count},
			Benchmarks: []manifest.Benchmark{{Name: "train", Command: []string{"/train"}, Results: "train.csv", Tags: []string{"a"},
				Timeout: manifest.Duration(time.Minute), Model: &manifest.Model{NGPUs: "-1", TrainingPrecision: "fp16", Args: "--x"}}}}
		j := map[string]any{"version": 1, "job": "local-20261123-1", "attempt": 0, "world": 2, "nodes": []string{"a", "b"},
			"startedAt": time.Now().UTC(), "benchctlVersion": "dev", "manifest": m.Redacted(),
			"image": map[string]string{"id": "sha256:1", "key": "k", "tag": "t:1"}}
		data, _ := json.Marshal(j)
		path := filepath.Join(t.TempDir(), JobFile)
		os.WriteFile(path, data, 0o644)
		got, err := ReadJob(path)
		if err != nil {
			t.Fatal(err)
		}
		b := got.Manifest.Benchmarks[0]
		if got.WorldSize() != 2 || got.Deployment() != "local" || b.Results != "train.csv" || b.Model.NGPUs != "-1" || got.Image.ID != "sha256:1" {
			t.Fatalf("%+v", got)
		}
		if want := map[manifest.Count]TextOrNo{0: "all", 8: "8"}[count]; got.Manifest.GPU.Count != want {
			t.Fatalf("gpu count %q, want %q", got.Manifest.GPU.Count, want)
		}
	}
}

func TestDeployment(t *testing.T) {
	for id, want := range map[string]string{"123": "slurm", "123_4": "slurm", "123+1": "slurm", "local-1": "local", "abc": "local", "": "local"} {
		if got := (&Job{Job: id}).Deployment(); got != want {
			t.Errorf("%q: %s", id, got)
		}
	}
	if (&Job{Job: "123", Source: "env"}).Deployment() != "local" {
		t.Error("the runner's source wins")
	}
}
