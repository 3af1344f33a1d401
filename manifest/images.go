package manifest

import (
	"strconv"
	"strings"
)

// A job may run its benchmarks on several images: the manifest's image:, a benchmark's own
// image:, or a MAD model's Dockerfile picked by GPU vendor. These helpers say which
// benchmark runs on which, and list each distinct image once.

// ImageOf is the image benchmark b runs on: its own, else the manifest's.
func (m *Manifest) ImageOf(b Benchmark) Image {
	if b.Image != nil {
		return *b.Image
	}
	return m.Image
}

// WithImage is a shallow copy of m whose image is img: what the image package builds and
// ensures one image of a job from (its name, records and progress stay the manifest's).
func (m *Manifest) WithImage(img Image) *Manifest {
	c := *m
	c.Image = img
	return &c
}

// ImageUse is one distinct image of a job and the benchmarks that run on it, in order.
type ImageUse struct {
	Image      Image    `json:"image" yaml:"image"`
	Benchmarks []string `json:"benchmarks" yaml:"benchmarks"`
}

// Images lists the distinct images benches run on, in the order they are first used. Two
// benchmarks share an image when their image settings are equal; images that differ in
// their settings but build the same content share a cache key, which the image package
// finds.
func (m *Manifest) Images(benches []Benchmark) []ImageUse {
	var out []ImageUse
	at := map[string]int{} // imageKey -> index in out: linear in the benchmarks, however many images
	for _, b := range benches {
		img := m.ImageOf(b)
		k := imageKey(img)
		if i, ok := at[k]; ok {
			out[i].Benchmarks = append(out[i].Benchmarks, b.Name)
			continue
		}
		at[k] = len(out)
		out = append(out, ImageUse{Image: img, Benchmarks: []string{b.Name}})
	}
	return out
}

// imageKey is equal for two images exactly when all their settings are: every field,
// written with its length so that no two different images give one key.
func imageKey(i Image) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	for _, s := range []string{i.Dockerfile, i.Context, i.Target, i.Platform, i.Tag, i.Ref, i.Pull, i.PullSecret} {
		field(s)
	}
	for _, a := range i.BuildArgs {
		field(a.Name)
		field(a.Value)
		if a.Secret {
			b.WriteByte('s')
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}
