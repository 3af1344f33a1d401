package jobdir

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
		j := &Job{Job: "local-20261123-1", World: 2, Nodes: []string{"a", "b"}, StartedAt: time.Now().UTC(), BenchctlVersion: "dev",
			Source: SourceLocal, Image: JobImage{ID: "sha256:1", Key: "k", Tag: "t:1"}}
		if err := j.SetManifest(m.Redacted()); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), JobFile)
		if err := WriteJob(path, j); err != nil {
			t.Fatal(err)
		}
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

// job.json of version 1 was written from a map, without source: it still reads.
func TestReadJobVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), JobFile)
	os.WriteFile(path, []byte(`{"version":1,"job":"123","attempt":0,"world":2,"nodes":["n1","n2"],"manifest":{"name":"m","benchmarks":[{"name":"b","results":"b.csv"}],"gpu":{"vendor":"amd","count":"all"}},"image":{"id":"sha256:1","key":"k","tag":"t"}}`), 0o644)
	j, err := ReadJob(path)
	if err != nil {
		t.Fatal(err)
	}
	if j.Deployment() != "slurm" || j.Manifest.Benchmarks[0].Results != "b.csv" || j.Image.Tag != "t" {
		t.Fatalf("%+v", j)
	}
	// Written again (rank 0 updates it), the manifest snapshot is kept whole.
	if err := WriteJob(path, j); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var raw map[string]any
	json.Unmarshal(data, &raw)
	if raw["version"] != float64(JobVersion) || raw["manifest"].(map[string]any)["gpu"] == nil {
		t.Fatalf("rewritten: %s", data)
	}
}

// The defect: the runner wrote job.json without source, so a local job whose id looks like
// a Slurm job id was labelled slurm.
func TestSourceIsWrittenAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), JobFile)
	j := &Job{Job: "4242", Source: SourceEnv}
	if err := WriteJob(path, j); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJob(path)
	if err != nil || got.Source != SourceEnv || got.Deployment() != "local" {
		t.Fatalf("%+v %v", got, err)
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

// A Kubernetes job's pods are perf.csv's deployment_type kubernetes, whatever its id looks like.
func TestDeploymentOfAKubernetesJob(t *testing.T) {
	for _, id := range []string{"12345", "k8s-7"} {
		if d := (&Job{Job: id, Source: SourceKubernetes}).Deployment(); d != "kubernetes" {
			t.Errorf("%s: %s", id, d)
		}
	}
}
