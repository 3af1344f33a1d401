package commands

import (
	"log/slog"
	"os"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// ManifestSource is where run and build take the job from: --manifest, or, as madengine
// users run, a MAD checkout's ./models.json with --tags and --context (madengine's
// --additional-context keys).
type ManifestSource struct {
	Manifest    string
	Tags        []string
	Context     string
	ContextFile string
	Generators  bool // --run-get-models-json
}

// Check says what is wrong with the flags given to the command name: exactly one of
// --manifest and --tags.
func (s *ManifestSource) Check(name string) error {
	switch {
	case s.Manifest != "" && len(s.Tags) > 0:
		return exitcode.Usagef("give --manifest m.yaml, or --tags in a MAD checkout (its models.json), not both", "--manifest and --tags are both given")
	case s.Manifest == "" && len(s.Tags) == 0:
		return exitcode.Usagef("benchctl "+name+" --manifest m.yaml, or in a MAD checkout: benchctl "+name+" --tags vllm --context '{\"gpu_vendor\": \"AMD\"}'", "--manifest is required (or --tags, in a MAD checkout)")
	case s.Manifest != "" && (s.Context != "" || s.ContextFile != "" || s.Generators):
		return exitcode.Usagef("put these settings in the manifest (see docs/migrating-from-madengine.md), or use --tags instead of --manifest", "--context, --context-file and --run-get-models-json apply only with --tags")
	}
	return nil
}

// load loads the manifest, or the one a MAD checkout run stands for, and logs its warnings.
func (s *ManifestSource) load() (*manifest.Manifest, error) {
	if s.Manifest != "" {
		return loadManifest(s.Manifest)
	}
	m, warnings, err := models.OpenCheckout(models.CheckoutOptions{Tags: s.Tags, Context: s.Context, ContextFile: s.ContextFile, Lookup: os.LookupEnv, RunGenerators: s.Generators})
	for _, w := range warnings {
		slog.Warn(w)
	}
	return m, err
}
