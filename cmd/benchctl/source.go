package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
	"github.com/benchctl/benchctl/runner"
)

// manifestSource is where run and build take the job from: --manifest, or, as madengine
// users run, a MAD checkout's ./models.json with --tags and --context (madengine's
// --additional-context keys).
type manifestSource struct {
	manifest    string
	tags        []string
	context     string
	contextFile string
}

func (s *manifestSource) addFlags(cmd *cobra.Command, f *pflag.FlagSet) {
	f.StringVarP(&s.manifest, "manifest", "m", "", "manifest file (.yaml, .yml or .json)")
	f.StringSliceVar(&s.tags, "tags", nil, "without --manifest: run the models of ./models.json (a MAD checkout) with these tags or names (comma-separated, or the flag repeated; all for every model)")
	f.StringVar(&s.context, "context", "", `with --tags: madengine's --additional-context as JSON, e.g. '{"gpu_vendor": "AMD", "docker_env_vars": {"HF_HOME": "/data/hf"}}'`)
	f.StringVar(&s.contextFile, "context-file", "", "with --tags: a file holding the --context JSON")
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("context-file", "json")
	_ = cmd.RegisterFlagCompletionFunc("tags", completeCheckoutTags)
}

// check says what is wrong with the flags given: exactly one of --manifest and --tags.
func (s *manifestSource) check(cmd *cobra.Command) error {
	name := cmd.Name()
	switch {
	case s.manifest != "" && len(s.tags) > 0:
		return usagef("give --manifest m.yaml, or --tags in a MAD checkout (its models.json), not both", "--manifest and --tags are both given")
	case s.manifest == "" && len(s.tags) == 0:
		return usagef("benchctl "+name+" --manifest m.yaml, or in a MAD checkout: benchctl "+name+" --tags vllm --context '{\"gpu_vendor\": \"AMD\"}'", "--manifest is required (or --tags, in a MAD checkout)")
	case s.manifest != "" && (s.context != "" || s.contextFile != ""):
		return usagef("put these settings in the manifest (see docs/migrating-from-madengine.md), or use --tags instead of --manifest", "--context and --context-file apply only with --tags")
	}
	return nil
}

// load loads the manifest, or the one a MAD checkout run stands for, and logs its warnings.
func (s *manifestSource) load() (*manifest.Manifest, error) {
	if s.manifest != "" {
		return loadManifest(s.manifest)
	}
	m, warnings, err := runner.LoadCheckout(models.CheckoutOptions{Tags: s.tags, Context: s.context, ContextFile: s.contextFile, Lookup: os.LookupEnv})
	for _, w := range warnings {
		slog.Warn(w)
	}
	return m, err
}

// completeCheckoutTags completes --tags from ./models.json: every tag and model name.
func completeCheckoutTags(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, err := models.Load("models.json")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	seen := map[string]bool{"all": true}
	out := []string{"all"}
	for _, m := range c.Models {
		for _, t := range append([]string{m.Name}, m.Tags...) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
