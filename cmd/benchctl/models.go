package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"
)

func newModelsCmd(io iostreams.Streams, list runF[*commands.ModelsListOptions]) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "models",
		Short: "Work with madengine/MAD model catalogs (models.json)",
		Long: `Work with benchmark catalogs in the madengine/MAD models.json format. A manifest imports
models from a catalog with models: {catalog: PATH, tags: [...]}.`,
		Example: `  benchctl models list --catalog models/models.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("try 'benchctl models list --catalog models.json'", "'benchctl models' needs a subcommand")
		},
	}
	cmd.AddCommand(newModelsListCmd(io, list))
	return cmd
}

func newModelsListCmd(io iostreams.Streams, run runF[*commands.ModelsListOptions]) *cobra.Command {
	run = run.or(commands.ModelsList)
	opts := &commands.ModelsListOptions{}
	cmd := &cobra.Command{
		Use:   "list [--catalog FILE] [--tags T,...]",
		Short: "List the models of a catalog, optionally selected by tags",
		Long: `List the models of a madengine/MAD models.json catalog with their tags, GPU count, timeout
and command: the --catalog given, else ./models.json (a MAD checkout), as run --tags reads.
A models.json with a scripts/ folder beside it (a MAD checkout) also holds the models of each
scripts/<dir>/models.json, named <dir>/<name> as madengine names them.
--tags selects models as madengine does: a model is listed when it has any of
the tags (a model's name also works as a tag; "all" lists everything).`,
		Example: `  benchctl models list --catalog models/models.json
  cd MAD && benchctl models list --tags vllm
  benchctl models list --catalog ../MAD/models.json --tags vllm,inference -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Catalog == "" {
				catalog, found, err := models.CheckoutCatalog("")
				if err != nil || !found {
					return usagef("give the catalog (benchctl models list --catalog models.json), or run in a MAD checkout",
						"no --catalog given and no models.json in %s", filepath.Dir(catalog))
				}
				opts.Catalog = catalog
			}
			return run(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Catalog, "catalog", "", "models.json catalog file (default ./models.json)")
	cmd.Flags().StringSliceVar(&opts.Tags, "tags", nil, "select models with any of these tags (comma-separated; all = every model)")
	outputFlag(cmd, &opts.Output, "table", "json")
	choiceFlag(cmd, cmd.Flags(), &opts.Vendor, "gpu-vendor", "", "", "show the Dockerfile each model's dockerfile prefix gives for this GPU vendor (amd or nvidia), by its CONTEXT line", "amd", "nvidia").fold = true
	cmd.Flags().BoolVar(&opts.Generators, "run-get-models-json", false, "run the checkout's scripts/<dir>/get_models_json.py (python3, its code, on this machine) to list the models it generates, as madengine does; without it a checkout that has one is refused")
	cmd.Flags().StringVar(&opts.GuestOS, "guest-os", "", "with --gpu-vendor: the guest_os the Dockerfile must be for (e.g. UBUNTU), when several match")
	_ = cmd.MarkFlagFilename("catalog", "json")
	_ = cmd.RegisterFlagCompletionFunc("tags", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if opts.Catalog == "" {
			return completeCheckoutTags(cmd, args, toComplete)
		}
		return completeTags(opts.Catalog, toComplete)
	})
	return cmd
}
