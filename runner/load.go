package runner

import (
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// LoadManifest loads a manifest as every command that takes --manifest does: decoded,
// validated and resolved (with its MAD catalog import), and, when it builds an image, with
// each .dockerignore checked — a bad pattern is the manifest's build input, so it is
// reported now rather than when the build starts. Warnings are for the caller to show.
func LoadManifest(path string, lookup func(string) (string, bool)) (*manifest.Manifest, []string, error) {
	m, warnings, err := models.LoadManifest(path, lookup)
	if err != nil {
		return m, warnings, err
	}
	for _, use := range m.Images(m.Benchmarks) {
		if use.Image.Builds() {
			if err := image.CheckDockerignore(image.InputFromManifest(m.WithImage(use.Image))); err != nil {
				return nil, warnings, err
			}
		}
	}
	return m, warnings, nil
}
