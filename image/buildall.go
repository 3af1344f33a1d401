package image

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/manifest"
)

// BuildAllOptions configure BuildAll: BuildOptions for each image, and a callback told
// which image is next (for the caller's progress).
type BuildAllOptions struct {
	BuildOptions
	// Benchmarks are the benchmarks whose images are built (default: all of the manifest's).
	Benchmarks []manifest.Benchmark
	// Starting, if set, is called before each image: i of n (from 1), and its use.
	Starting func(i, n int, use manifest.ImageUse)
}

// BuiltImage is one image of BuildAll: its use, and its record (nil when it is an
// image.ref, used as it is and never built) or why it failed.
type BuiltImage struct {
	Use    manifest.ImageUse
	Record *Record
	Err    error
}

// BuildAll builds and publishes every image the manifest's benchmarks run on, one after
// the other: a failed image does not stop the others (an hour of builds is not thrown
// away for one broken Dockerfile). The error, when any failed, names each failed image
// and its benchmarks; it wraps the first *BuildError (exit code 2). A manifest whose
// images are all image.ref has nothing to build: that is an error too.
func BuildAll(ctx context.Context, o BuildAllOptions) ([]BuiltImage, error) {
	m := o.Manifest
	benches := o.Benchmarks
	if benches == nil {
		benches = m.Benchmarks
	}
	uses := m.Images(benches)
	if len(uses) == 0 { // no benchmark selected: the manifest's own image, if any
		uses = []manifest.ImageUse{{Image: m.Image}}
	}
	out := make([]BuiltImage, 0, len(uses))
	var failed []string
	var first error
	builds := 0
	for i, use := range uses {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		bi := BuiltImage{Use: use}
		if !use.Image.Builds() {
			out = append(out, bi)
			continue
		}
		builds++
		if o.Starting != nil {
			o.Starting(i+1, len(uses), use)
		}
		bo := o.BuildOptions
		bo.Manifest = m.WithImage(use.Image)
		bi.Record, bi.Err = Build(ctx, bo)
		if bi.Record != nil {
			bi.Record.Benchmarks = use.Benchmarks
		}
		if bi.Err != nil {
			if errors.Is(bi.Err, context.Canceled) {
				return out, bi.Err
			}
			failed = append(failed, fmt.Sprintf("%s (benchmarks %s)", use.Image, strings.Join(use.Benchmarks, ", ")))
			if first == nil {
				first = bi.Err
			}
		}
		out = append(out, bi)
	}
	if builds == 0 {
		return out, fmt.Errorf("manifest %s uses only existing images (image.ref: %s): there is nothing to build", m.Name, refsOf(uses))
	}
	if first != nil {
		if len(uses) == 1 {
			return out, first
		}
		return out, &BuildAllError{Failed: failed, Of: builds, First: first}
	}
	return out, nil
}

// BuildAllError is the failure of some of a manifest's images: it names them all and
// unwraps to the first failure (a *BuildError: exit code 2).
type BuildAllError struct {
	Failed []string // "dockerfile (benchmarks a, b)"
	Of     int      // the images built or tried
	First  error
}

func (e *BuildAllError) Error() string {
	return fmt.Sprintf("%d of %d images failed to build: %s\nthe first failure: %v", len(e.Failed), e.Of, strings.Join(e.Failed, "; "), e.First)
}

func (e *BuildAllError) Unwrap() error { return e.First }

func refsOf(uses []manifest.ImageUse) string {
	var refs []string
	for _, u := range uses {
		refs = append(refs, u.Image.Ref)
	}
	return strings.Join(refs, ", ")
}
