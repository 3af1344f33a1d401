package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/models"
)

// addSourceFlags are the flags that say which manifest a command runs: --manifest, or --tags
// over a MAD checkout.
func addSourceFlags(s *commands.ManifestSource, cmd *cobra.Command, f *pflag.FlagSet) {
	f.StringVarP(&s.Manifest, "manifest", "m", "", "manifest file (.yaml, .yml or .json)")
	f.StringSliceVar(&s.Tags, "tags", nil, "without --manifest: run the models of ./models.json (a MAD checkout) with these tags or names (comma-separated, or the flag repeated; all for every model)")
	f.StringVar(&s.Context, "context", "", `with --tags: madengine's --additional-context as JSON, e.g. '{"gpu_vendor": "AMD", "docker_env_vars": {"HF_HOME": "/data/hf"}}'`)
	f.StringVar(&s.ContextFile, "context-file", "", "with --tags: a file holding the --context JSON")
	f.BoolVar(&s.Generators, "run-get-models-json", false, "with --tags: run the checkout's scripts/<dir>/get_models_json.py (python3, its code, on this machine) to list the models it generates, as madengine does; without it a checkout that has one is refused")
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("context-file", "json")
	_ = cmd.RegisterFlagCompletionFunc("tags", completeCheckoutTags)
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
