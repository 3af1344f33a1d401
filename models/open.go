package models

import (
	"context"
	"fmt"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

// Open loads a manifest as every command that takes --manifest does: decoded,
// validated and resolved (with its MAD catalog import), and, for each image it builds, with
// its .dockerignore checked — a bad pattern is the manifest's build input, so it is
// reported now rather than when the build starts. Warnings are for the caller to show.
func Open(path string, lookup func(string) (string, bool)) (*manifest.Manifest, []string, error) {
	return checked(LoadManifest(path, lookup))
}

// OpenContext is Open that stops when ctx ends (a signal), returning its
// cause.
func OpenContext(ctx context.Context, path string, lookup func(string) (string, bool)) (*manifest.Manifest, []string, error) {
	return checked(LoadManifestContext(ctx, path, lookup))
}

// OpenCheckout is Open for a MAD checkout run without a manifest (run or build
// --tags, with madengine's --additional-context keys): the manifest it stands for, checked
// the same way.
func OpenCheckout(o CheckoutOptions) (*manifest.Manifest, []string, error) {
	return checked(CheckoutManifest(o))
}

func checked(m *manifest.Manifest, warnings []string, err error) (*manifest.Manifest, []string, error) {
	if err != nil {
		return m, warnings, err
	}
	for _, use := range m.Images(m.Benchmarks) {
		if use.Image.Builds() {
			in := image.InputFromManifest(m.WithImage(use.Image))
			if err := image.CheckDockerignore(in); err != nil {
				return nil, warnings, err
			}
			// A COPY source the context lacks (an example's binary before `make examples`):
			// the build will fail; say so now, in a dry run and in validate too.
			missing, err := image.MissingSources(in)
			if err != nil {
				return nil, warnings, err
			}
			for _, ms := range missing {
				warnings = append(warnings, fmt.Sprintf("%s: the build will fail at this COPY/ADD; %s", ms, image.MissingSourceHint))
			}
		}
	}
	return m, warnings, nil
}
