package results

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// JobFile is the name of the file rank 0 writes at the start of a job.
const JobFile = "job.json"

// Job is job.json, written by rank 0 at the start of a job. Only the parts collect needs
// are decoded; the manifest is the resolved, redacted manifest.
type Job struct {
	Version         int         `json:"version"`
	Job             string      `json:"job"`
	Attempt         int         `json:"attempt"`
	World           int         `json:"world"`
	Nodes           []string    `json:"nodes"`
	StartedAt       time.Time   `json:"startedAt"`
	BenchctlVersion string      `json:"benchctlVersion"`
	Source          string      `json:"source,omitempty"` // slurm, env or local, when the runner says
	Manifest        JobManifest `json:"manifest"`
	Image           JobImage    `json:"image"`
	// Benchmarks are the ones run (benchctl run --benchmarks); empty: all of the manifest's.
	Benchmarks []string `json:"benchmarks,omitempty"`
}

// JobImage is the image every node ran.
type JobImage struct {
	ID  string `json:"id"`
	Key string `json:"key"`
	Tag string `json:"tag"`
}

// JobManifest is the part of the resolved manifest that perf.csv's columns come from.
type JobManifest struct {
	Name       string         `json:"name"`
	Image      ManifestImage  `json:"image"`
	Benchmarks []JobBenchmark `json:"benchmarks"`
	GPU        ManifestGPU    `json:"gpu"`
}

// ManifestImage is how the image was made.
type ManifestImage struct {
	Dockerfile string `json:"dockerfile"`
	Tag        string `json:"tag"`
	Ref        string `json:"ref"`
}

// ManifestGPU is the GPU vendor and per-node count; Count is as written ("all" or a number).
type ManifestGPU struct {
	Vendor string   `json:"vendor"`
	Count  TextOrNo `json:"count"`
}

// JobBenchmark is one benchmark of the manifest.
type JobBenchmark struct {
	Name    string    `json:"name"`
	Command []string  `json:"command"`
	Results string    `json:"results"` // the CSV file in the benchmark's output folder
	Tags    []string  `json:"tags"`
	Model   *JobModel `json:"model,omitempty"`
}

// JobModel is the MAD catalog metadata of an imported benchmark.
type JobModel struct {
	NGPUs             TextOrNo `json:"nGPUs"`
	TrainingPrecision string   `json:"trainingPrecision"`
	Args              string   `json:"args"`
	Dockerfile        string   `json:"dockerfile"`
}

// TextOrNo is a JSON string or number kept as its text: 8, "8" and "all" all decode.
type TextOrNo string

// UnmarshalJSON accepts a string, a number or null.
func (t *TextOrNo) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "null":
		*t = ""
	case strings.HasPrefix(s, `"`):
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*t = TextOrNo(v)
	default:
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return fmt.Errorf("%s is neither a string nor a number", s)
		}
		*t = TextOrNo(s)
	}
	return nil
}

// ReadJob reads job.json (at most 16 MiB).
func ReadJob(path string) (*Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStatusSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > maxStatusSize {
		return nil, fmt.Errorf("reading %s: larger than %d MiB", path, maxStatusSize>>20)
	}
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &j, nil
}

// WorldSize is the number of nodes the job was meant to have.
func (j *Job) WorldSize() int { return max(j.World, len(j.Nodes)) }

// Deployment is perf.csv's deployment_type: "slurm" when the runner said so or the job id
// looks like a Slurm job id (digits, optionally an array or het-job suffix), else "local".
func (j *Job) Deployment() string {
	switch j.Source {
	case "slurm":
		return "slurm"
	case "env", "local":
		return "local"
	}
	if LooksLikeSlurmJobID(j.Job) {
		return "slurm"
	}
	return "local"
}

// LooksLikeSlurmJobID reports whether id is a Slurm job id: 123, 123_4 (array) or 123+1.
func LooksLikeSlurmJobID(id string) bool {
	head, tail, found := strings.Cut(id, "_")
	if !found {
		head, tail, found = strings.Cut(id, "+")
	}
	return allDigits(head) && (!found || allDigits(tail))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
