package image

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
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
	// Dockerfile is the Dockerfile built, and Benchmarks the manifest's benchmarks that run
	// on the image: what a run with several images matches each image's record by.
	Dockerfile string   `json:"dockerfile,omitempty"`
	Benchmarks []string `json:"benchmarks,omitempty"`
	// Pushed is where build --push put the image (registry/name@sha256:...).
	Pushed string   `json:"pushed,omitempty"`
	Notes  []string `json:"notes,omitempty"` // things the user should know, e.g. a tag that did not apply
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

// recordSet is the build record of a manifest with several images (version 2): one
// record per image. A manifest with one image keeps writing a version-1 record.
type recordSet struct {
	Version int       `json:"version"`
	Images  []*Record `json:"images"`
}

// WriteRecords writes the build records of a manifest's images atomically: a version-1
// record for one image, a version-2 set of records for several.
func WriteRecords(path string, recs []*Record) error {
	if len(recs) == 1 {
		return WriteRecord(path, recs[0])
	}
	data, err := json.MarshalIndent(recordSet{Version: 2, Images: recs}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// ReadRecords reads a build record file: one record (version 1) or the records of a
// manifest's images (version 2).
func ReadRecords(path string) ([]*Record, error) {
	data, err := safefile.ReadFile(path, 16<<20) // a FIFO is refused without blocking
	if err != nil {
		return nil, fmt.Errorf("reading build record: %w", err)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("build record %s: %w", path, err)
	}
	if head.Version != 2 {
		r, err := decodeRecord(path, data)
		if err != nil {
			return nil, err
		}
		return []*Record{r}, nil
	}
	var set struct {
		Images []json.RawMessage `json:"images"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("build record %s: %w", path, err)
	}
	if len(set.Images) == 0 {
		return nil, fmt.Errorf("build record %s (version 2) lists no images", path)
	}
	out := make([]*Record, 0, len(set.Images))
	for i, raw := range set.Images {
		r, err := decodeRecord(fmt.Sprintf("%s: images[%d]", path, i), raw)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// WriteRecord writes a build record atomically.
func WriteRecord(path string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// decodeRecord decodes one record; path says where it was read.
func decodeRecord(path string, data []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("build record %s: %w", path, err)
	}
	if r.Version != 1 || !keyRE.MatchString(r.Key) || r.ImageID == "" {
		return nil, fmt.Errorf("build record %s is not a benchctl build record (version 1 with key and imageId)", path)
	}
	return &r, nil
}

// RecordFor picks, from the records of `benchctl build --record`, the one that pins img,
// which benchmarks run on: the only record when the job has one image, else the record of
// the same Dockerfile. A record of another manifest's images is an error saying which
// image it lacks.
func RecordFor(recs []*Record, img manifest.Image, images int, benchmarks []string) (*Record, error) {
	if len(recs) == 1 && images == 1 {
		return recs[0], nil
	}
	// The image's content, as it is now: a record of exactly it wins, wherever its
	// Dockerfile was when it was built (a CI checkout elsewhere).
	if key, err := Key(InputFromManifest(&manifest.Manifest{Image: img})); err == nil {
		for _, r := range recs {
			if r.Key == key {
				return r, nil
			}
		}
	}
	var same []*Record
	for _, r := range recs {
		if r.Dockerfile != "" && r.Dockerfile == img.Dockerfile {
			same = append(same, r)
		}
	}
	if len(same) > 1 { // one Dockerfile built with other build args: the args decide
		var args []*Record
		for _, r := range same {
			if sameArgs(r.BuildArgs, img.BuildArgs) {
				args = append(args, r)
			}
		}
		same = args
	}
	switch len(same) {
	case 1:
		return same[0], nil
	case 0:
		return nil, fmt.Errorf("the build record pins %d image(s) and none is built from %s with these build args (benchmarks %s): run benchctl build --record again for this manifest",
			len(recs), img, strings.Join(benchmarks, ", "))
	}
	return nil, fmt.Errorf("the build record pins %d images built from %s with the same build args: it is not from one benchctl build of this manifest; run benchctl build --record again", len(same), img)
}

func sameArgs(rec []KeyValue, args []manifest.EnvVar) bool {
	if len(rec) != len(args) {
		return false
	}
	for i, a := range args {
		if rec[i].Name != a.Name || rec[i].Value != a.Value {
			return false
		}
	}
	return true
}
