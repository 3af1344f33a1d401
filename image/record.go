package image

import (
	"encoding/json"
	"fmt"
	"github.com/benchctl/benchctl/internal/safefile"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
)

// Record is what `benchctl build` writes (build.json): enough to pin the image of a run. It
// holds no secrets: secrets never reach build args, and build args are all it records.
type Record struct {
	Version        int        `json:"version"`
	Manifest       string     `json:"manifest"`
	ManifestPath   string     `json:"manifestPath"`
	ManifestDigest string     `json:"manifestDigest"`
	Key            string     `json:"key"`
	ImageID        string     `json:"imageId"`
	Tag            string     `json:"tag"`
	Size           int64      `json:"size"`
	Tar            string     `json:"tar"`
	SHA256         string     `json:"sha256"`
	Builder        string     `json:"builder"`
	CacheHit       bool       `json:"cacheHit"`
	Durations      Durations  `json:"durations"`
	Created        time.Time  `json:"created"`
	Benchctl       string     `json:"benchctl"`
	BuildArgs      []KeyValue `json:"buildArgs,omitempty"`
	Notes          []string   `json:"notes,omitempty"` // things the user should know, e.g. a tag that did not apply
}

// KeyValue is a build argument in the record.
type KeyValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Durations of the steps of a build, in seconds.
type Durations struct {
	Key     float64 `json:"key"`
	Build   float64 `json:"build"` // build and save (publish) together
	Total   float64 `json:"total"`
	Waiting float64 `json:"waiting,omitempty"` // for another builder of the same key
}

// WriteRecord writes a build record atomically.
func WriteRecord(path string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// ReadRecord reads a build record.
func ReadRecord(path string) (*Record, error) {
	data, err := safefile.ReadFile(path, 16<<20) // a FIFO is refused without blocking
	if err != nil {
		return nil, fmt.Errorf("reading build record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("build record %s: %w", path, err)
	}
	if r.Version != 1 || !keyRE.MatchString(r.Key) || r.ImageID == "" {
		return nil, fmt.Errorf("build record %s is not a benchctl build record (version 1 with key and imageId)", path)
	}
	return &r, nil
}
