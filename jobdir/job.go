package jobdir

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// JobVersion is the schema version of job.json that this package writes.
const JobVersion = 3

// Sources of a node context (Job.Source).
const (
	SourceSlurm = "slurm"
	SourceEnv   = "env"
	SourceLocal = "local"
	// SourceKubernetes is a job of a Kubernetes Indexed Job's pods (scheduler/kubernetes).
	SourceKubernetes = "kubernetes"
)

// Job is job.json, written by rank 0 at the start of a job and again when the image is
// known. Manifest holds the parts of the resolved, redacted manifest that collect needs;
// the whole snapshot is kept as written (SetManifest) and survives a read and a write.
type Job struct {
	Version         int       `json:"version"`
	Job             string    `json:"job"`
	Attempt         int       `json:"attempt"`
	World           int       `json:"world"`
	Nodes           []string  `json:"nodes"`
	StartedAt       time.Time `json:"startedAt"`
	BenchctlVersion string    `json:"benchctlVersion"`
	Source          string    `json:"source,omitempty"` // SourceSlurm, SourceEnv or SourceLocal (version 2 on)
	// Namespace is the Kubernetes namespace of the job's objects and pods (Source kubernetes).
	Namespace string      `json:"namespace,omitempty"`
	Manifest  JobManifest `json:"-"`
	// Image is set once rank 0 has the job's image: its only one, or its first of several.
	Image JobImage `json:"image,omitzero"`
	// Images, when the benchmarks run on several images (version 3 on), lists each with the
	// benchmarks that run on it; Image is then the first of them. See ImageOf.
	Images []JobImage `json:"images,omitempty"`
	// Benchmarks are the ones run (benchctl run --benchmarks); empty: all of the manifest's.
	Benchmarks []string `json:"benchmarks,omitempty"`
	// BuildNumber is $BUILD_NUMBER where rank 0 ran (a CI build, as madengine records it).
	BuildNumber string `json:"buildNumber,omitempty"`
	// TrialSeed is the seed of a shuffled trial order (an experiment with order: shuffle).
	TrialSeed *int64 `json:"trialSeed,omitempty"`
	// TrialOrder is the experiment's plan as rank 0 made it: the variant of each trial, in
	// the order run (manifest.TrialOrder). Every rank, a requeued attempt and collect read
	// the plan from here; job.json files written before it have none, and collect then
	// derives the plan from TrialSeed.
	TrialOrder []int `json:"trialOrder,omitempty"`
	// Engine is the container engine rank 0 found (each node's own is in its node.json):
	// set once rank 0 has asked it, empty in job.json files written before.
	Engine *JobEngine `json:"engine,omitempty"`
	// TrialSources, in a requeued job with an experiment, say which earlier attempt's
	// folder holds each trial this attempt did not run again: it resumed after them.
	TrialSources []TrialSource `json:"trialSources,omitempty"`

	snapshot json.RawMessage // the manifest as written
}

// JobEngine is which container engine answered: docker or podman, its name, version and
// API version as its version API says, whether it runs rootless, and its address.
type JobEngine struct {
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Version    string `json:"version"`
	APIVersion string `json:"apiVersion"`
	Rootless   bool   `json:"rootless"`
	Host       string `json:"host,omitempty"`
}

// SetManifest records the manifest snapshot (already redacted: job.json is readable by
// everyone who can read the shared folder) and decodes from it the parts collect reads.
func (j *Job) SetManifest(m any) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding the manifest for job.json: %w", err)
	}
	var jm JobManifest
	if err := json.Unmarshal(data, &jm); err != nil {
		return fmt.Errorf("the manifest does not fit job.json's schema: %w", err)
	}
	j.snapshot, j.Manifest = data, jm
	return nil
}

// MarshalJSON writes the snapshot set by SetManifest (or read from the file).
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job // without the method
	out := struct {
		plain
		Manifest json.RawMessage `json:"manifest,omitempty"`
	}{plain(j), j.snapshot}
	return json.Marshal(out)
}

// UnmarshalJSON reads job.json, keeping the manifest snapshot whole.
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	var in struct {
		plain
		Manifest json.RawMessage `json:"manifest"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*j = Job(in.plain)
	if len(in.Manifest) > 0 && string(in.Manifest) != "null" {
		if err := json.Unmarshal(in.Manifest, &j.Manifest); err != nil {
			return fmt.Errorf("manifest: %w", err)
		}
		j.snapshot = in.Manifest
	}
	return nil
}

// JobImage is an image every node ran.
type JobImage struct {
	ID  string `json:"id"`
	Key string `json:"key"`
	Tag string `json:"tag"`
	// Dockerfile is the Dockerfile it was built from (empty for an image.ref), and
	// Benchmarks the benchmarks that ran on it (in Job.Images only).
	Dockerfile string   `json:"dockerfile,omitempty"`
	Benchmarks []string `json:"benchmarks,omitempty"`
	// Digest is an image.ref's registry digest (repo@sha256:...), when rank 0's engine knows
	// it: what the tag resolved to for this job.
	Digest string `json:"digest,omitempty"`
	// Base is the image it was built FROM (or the image.ref used as it is); GitCommit the
	// commit of the build context's git repository, when it is in one.
	Base      string `json:"base,omitempty"`
	GitCommit string `json:"gitCommit,omitempty"`
	// BuildSeconds is how long its build took, when rank 0 built it or ran it from a build
	// record (perf.csv's build_duration).
	BuildSeconds float64 `json:"buildSeconds,omitempty"`
	// Distribution is how it reached the other nodes: cache (loaded from the shared cache),
	// stream (streamed from rank 0) or ref (each node's own copy, or pulled); empty for a
	// job of one node.
	Distribution string `json:"distribution,omitempty"`
}

// JobManifest is the part of the resolved manifest that perf.csv's columns come from.
type JobManifest struct {
	Name       string         `json:"name"`
	Image      ManifestImage  `json:"image"`
	Benchmarks []JobBenchmark `json:"benchmarks"`
	GPU        ManifestGPU    `json:"gpu"`
	// Experiment is the manifest's experiment (variants and trials), nil without one.
	Experiment *JobExperiment `json:"experiment,omitempty"`
	// Metrics are the manifest's rules for judging metrics (first match wins).
	Metrics []JobMetricRule `json:"metrics,omitempty"`
	// Tools are the tools (madengine's profilers and tracers) every benchmark ran under,
	// in the order they stacked (the first innermost).
	Tools []string `json:"tools,omitempty"`
}

// JobMetricRule is how a metric (a name or glob) is judged: which way is better (higher,
// lower, "" to guess) and the tolerance in percent (nil: compare's threshold).
type JobMetricRule struct {
	Metric    string   `json:"metric"`
	Better    string   `json:"better,omitempty"`
	Tolerance *float64 `json:"tolerance,omitempty"`
}

// JobExperiment is a manifest's experiment as job.json records it.
type JobExperiment struct {
	Params   []string     `json:"params"`
	Variants []JobVariant `json:"variants"`
	Repeat   int          `json:"repeat"`
	Warmup   int          `json:"warmup"`
	Order    string       `json:"order"`
	Seed     *int64       `json:"seed,omitempty"`
}

// JobVariant is one variant of an experiment.
type JobVariant struct {
	ID     string     `json:"id"`
	Params []JobParam `json:"params"`
	Nodes  int        `json:"nodes,omitempty"` // 0: every node of the job
	// Results names the results file of the benchmarks whose results take a parameter.
	Results map[string]string `json:"results,omitempty"`
}

// JobParam is a parameter's value in a variant.
type JobParam struct {
	Name  string `json:"name"`
	Value string `json:"value"`
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
	// Launcher is the distributed launcher the benchmark named (its own launcher:, the
	// manifest's, or its MAD model's distributed.launcher); "" when it named none.
	Launcher string `json:"launcher,omitempty"`
}

// JobModel is the MAD catalog metadata of an imported benchmark.
type JobModel struct {
	NGPUs             TextOrNo `json:"nGPUs"`
	TrainingPrecision string   `json:"trainingPrecision"`
	Args              string   `json:"args"`
	Dockerfile        string   `json:"dockerfile"`
	// RunOptions are the model's additional_docker_run_options, credential-like values
	// redacted (job.json is the redacted manifest).
	RunOptions string `json:"runOptions"`
	// DataSets are the data sets the model read (its data key), as benchctl mounted them.
	DataSets []JobDataSet `json:"dataSets,omitempty"`
	// Commit is the commit of the model's url that the job cloned (perf.csv's git_commit).
	Commit string `json:"commit,omitempty"`
}

// JobDataSet is one data set of a MAD model (manifest.DataSet): what perf.csv's data
// columns say.
type JobDataSet struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Size     string `json:"size"`
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

// ReadJob reads job.json (a regular file of at most 16 MiB, not a link).
func ReadJob(path string) (*Job, error) {
	var r safefile.Reader
	data, err := r.ReadNoFollow(path, MaxStatusSize)
	if err != nil {
		return nil, err
	}
	var j Job
	if err := decodeFile(path, data, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// WriteJob writes job.json atomically. Version is set to JobVersion.
func WriteJob(path string, j *Job) error {
	j.Version = JobVersion
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// ImageOf is the image benchmark name ran on: its entry in Images, else Image.
func (j *Job) ImageOf(name string) JobImage {
	for _, im := range j.Images {
		if slices.Contains(im.Benchmarks, name) {
			return im
		}
	}
	return j.Image
}

// WorldSize is the number of nodes the job was meant to have.
func (j *Job) WorldSize() int { return max(j.World, len(j.Nodes)) }

// Deployment is perf.csv's deployment_type: "slurm" when the runner said so or the job id
// looks like a Slurm job id (digits, optionally an array or het-job suffix), "kubernetes"
// for a Kubernetes job's pods, else "local".
func (j *Job) Deployment() string {
	switch j.Source {
	case SourceSlurm:
		return "slurm"
	case SourceKubernetes:
		return "kubernetes"
	case SourceEnv, SourceLocal:
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

// TrialSource is a range of trials (their places in the plan, First to Last) that attempt
// Attempt ran to their end.
type TrialSource struct {
	Attempt int `json:"attempt"`
	First   int `json:"first"`
	Last    int `json:"last"`
}

// TrialAttempt is the earlier attempt that holds trial seq, or -1 when this attempt runs it.
func (j *Job) TrialAttempt(seq int) int {
	for _, s := range j.TrialSources {
		if seq >= s.First && seq <= s.Last {
			return s.Attempt
		}
	}
	return -1
}

// ResumedAfter is the last trial this attempt did not run again (0: it ran every trial).
func (j *Job) ResumedAfter() int {
	n := 0
	for _, s := range j.TrialSources {
		n = max(n, s.Last)
	}
	return n
}
