package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// manifestSource is where run and build take the job from: --manifest, or, as madengine
// users run, a MAD checkout's ./models.json with --tags and --context (madengine's
// --additional-context keys).
type manifestSource struct {
	manifest    string
	tags        []string
	context     string
	contextFile string
	generators  bool // --run-get-models-json
}

func (s *manifestSource) addFlags(cmd *cobra.Command, f *pflag.FlagSet) {
	f.StringVarP(&s.manifest, "manifest", "m", "", "manifest file (.yaml, .yml or .json)")
	f.StringSliceVar(&s.tags, "tags", nil, "without --manifest: run the models of ./models.json (a MAD checkout) with these tags or names (comma-separated, or the flag repeated; all for every model)")
	f.StringVar(&s.context, "context", "", `with --tags: madengine's --additional-context as JSON, e.g. '{"gpu_vendor": "AMD", "docker_env_vars": {"HF_HOME": "/data/hf"}}'`)
	f.StringVar(&s.contextFile, "context-file", "", "with --tags: a file holding the --context JSON")
	f.BoolVar(&s.generators, "run-get-models-json", false, "with --tags: run the checkout's scripts/<dir>/get_models_json.py (python3, its code, on this machine) to list the models it generates, as madengine does; without it a checkout that has one is refused")
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("context-file", "json")
	_ = cmd.RegisterFlagCompletionFunc("tags", completeCheckoutTags)
}

// check says what is wrong with the flags given to the command name: exactly one of
// --manifest and --tags.
func (s *manifestSource) check(name string) error {
	switch {
	case s.manifest != "" && len(s.tags) > 0:
		return usagef("give --manifest m.yaml, or --tags in a MAD checkout (its models.json), not both", "--manifest and --tags are both given")
	case s.manifest == "" && len(s.tags) == 0:
		return usagef("benchctl "+name+" --manifest m.yaml, or in a MAD checkout: benchctl "+name+" --tags vllm --context '{\"gpu_vendor\": \"AMD\"}'", "--manifest is required (or --tags, in a MAD checkout)")
	case s.manifest != "" && (s.context != "" || s.contextFile != "" || s.generators):
		return usagef("put these settings in the manifest (see docs/migrating-from-madengine.md), or use --tags instead of --manifest", "--context, --context-file and --run-get-models-json apply only with --tags")
	}
	return nil
}

// load loads the manifest, or the one a MAD checkout run stands for, and logs its warnings.
func (s *manifestSource) load() (*manifest.Manifest, error) {
	if s.manifest != "" {
		return loadManifest(s.manifest)
	}
	m, warnings, err := models.OpenCheckout(models.CheckoutOptions{Tags: s.tags, Context: s.context, ContextFile: s.contextFile, Lookup: os.LookupEnv, RunGenerators: s.generators})
	for _, w := range warnings {
		slog.Warn(w)
	}
	return m, err
}

// completeCheckoutTags completes --tags from ./models.json (a MAD checkout).
func completeCheckoutTags(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeTags("models.json", toComplete)
}

// completeTags completes a --tags value from a catalog: all, then every model name and tag,
// in the catalog's order, each once. --tags takes a comma-separated list: what is typed after the last
// comma is completed, and the words before it stay in front.
func completeTags(catalog, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if catalog == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := models.LoadCheckoutCatalog(context.Background(), catalog, models.Discovery{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	done, last := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	seen := map[string]bool{}
	for _, t := range strings.Split(done, ",") {
		seen[t] = true // given already
	}
	var words []string
	if done == "" {
		words = append(words, "all") // every model: not one tag among others
	}
	for _, m := range c.Models {
		words = append(append(words, m.Name), m.Tags...)
	}
	var out []cobra.Completion
	for _, w := range words {
		if !seen[w] && strings.HasPrefix(w, last) {
			seen[w] = true
			out = append(out, done+w)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
