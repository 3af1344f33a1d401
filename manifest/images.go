package manifest

import "slices"

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
next:
	for _, b := range benches {
		img := m.ImageOf(b)
		for i := range out {
			if sameImage(out[i].Image, img) {
				out[i].Benchmarks = append(out[i].Benchmarks, b.Name)
				continue next
			}
		}
		out = append(out, ImageUse{Image: img, Benchmarks: []string{b.Name}})
	}
	return out
}

func sameImage(a, b Image) bool {
	return a.Dockerfile == b.Dockerfile && a.Context == b.Context && a.Target == b.Target && a.Platform == b.Platform &&
		a.Tag == b.Tag && a.Ref == b.Ref && a.Pull == b.Pull && a.PullSecret == b.PullSecret && slices.Equal(a.BuildArgs, b.BuildArgs)
}
