package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"
	"github.com/spf13/cobra"
)

func newModelsCmd(io iostreams.Streams) *cobra.Command {
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
	cmd.AddCommand(newModelsListCmd(io))
	return cmd
}

type modelsListOptions struct {
	catalog    string
	tags       []string
	output     string
	vendor     string
	guestOS    string
	generators bool
}

func newModelsListCmd(io iostreams.Streams) *cobra.Command {
	opts := &modelsListOptions{}
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
			if opts.catalog == "" {
				catalog, found, err := models.CheckoutCatalog("")
				if err != nil || !found {
					return usagef("give the catalog (benchctl models list --catalog models.json), or run in a MAD checkout",
						"no --catalog given and no models.json in %s", filepath.Dir(catalog))
				}
				opts.catalog = catalog
			}
			return modelsListRun(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.catalog, "catalog", "", "models.json catalog file (default ./models.json)")
	cmd.Flags().StringSliceVar(&opts.tags, "tags", nil, "select models with any of these tags (comma-separated; all = every model)")
	outputFlag(cmd, &opts.output, "table", "json")
	choiceFlag(cmd, cmd.Flags(), &opts.vendor, "gpu-vendor", "", "", "show the Dockerfile each model's dockerfile prefix gives for this GPU vendor (amd or nvidia), by its CONTEXT line", "amd", "nvidia").fold = true
	cmd.Flags().BoolVar(&opts.generators, "run-get-models-json", false, "run the checkout's scripts/<dir>/get_models_json.py (python3, its code, on this machine) to list the models it generates, as madengine does; without it a checkout that has one is refused")
	cmd.Flags().StringVar(&opts.guestOS, "guest-os", "", "with --gpu-vendor: the guest_os the Dockerfile must be for (e.g. UBUNTU), when several match")
	_ = cmd.MarkFlagFilename("catalog", "json")
	_ = cmd.RegisterFlagCompletionFunc("tags", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if opts.catalog == "" {
			return completeCheckoutTags(cmd, args, toComplete)
		}
		return completeTags(opts.catalog, toComplete)
	})
	return cmd
}

type modelRow struct {
	Name    string   `json:"name"`
	Tags    []string `json:"tags"`
	NGPUs   string   `json:"nGPUs,omitempty"`
	Timeout string   `json:"timeout"`
	Command []string `json:"command"`
	Results string   `json:"results,omitempty"`
	// RunDir is the checkout's folder copied into the model's run directory, where the
	// command runs; "" for a program of the image.
	RunDir string `json:"runDir,omitempty"`
	// Dockerfile is what the model's dockerfile prefix gives for --gpu-vendor; DockerfileError
	// why it gives none.
	Dockerfile      string   `json:"dockerfile,omitempty"`
	DockerfileError string   `json:"dockerfileError,omitempty"`
	Warnings        []string `json:"-"`
}

func modelsListRun(ctx context.Context, io iostreams.Streams, opts *modelsListOptions) error {
	c, err := models.LoadCheckoutCatalog(ctx, opts.catalog, models.Discovery{RunGenerators: opts.generators})
	if err != nil {
		return err
	}
	for _, w := range c.Warnings {
		slog.Debug(w)
	}
	list := c.Models
	if len(opts.tags) > 0 {
		var warns []string
		list, warns, err = c.Select(opts.tags, nil)
		if err != nil {
			return err
		}
		for _, w := range warns {
			slog.Warn(w)
		}
	}
	rows := make([]modelRow, 0, len(list))
	for i, m := range list {
		if i%1024 == 0 && ctx.Err() != nil {
			return fmt.Errorf("listing %s: %w", c.Path, context.Cause(ctx))
		}
		b, err := m.Benchmark(c.Path)
		if err != nil {
			return fmt.Errorf("%s:%d: %s: %w", c.Path, m.Line, m.Name, err)
		}
		row := modelRow{Name: m.Name, Tags: m.Tags, NGPUs: m.NGPUs, Timeout: time.Duration(b.Timeout).String(),
			Command: b.Command, Results: b.Results, RunDir: b.Model.RunDir}
		if opts.vendor != "" {
			df, err := models.ResolveDockerfile(filepath.Dir(c.Path), m.Name, m.Dockerfile, opts.vendor, opts.guestOS)
			if err != nil {
				row.DockerfileError = err.Error()
				slog.Warn(err.Error())
			} else if rel, rerr := filepath.Rel(filepath.Dir(c.Path), df); rerr == nil {
				row.Dockerfile = rel
			}
		}
		rows = append(rows, row)
	}
	if opts.output == "json" {
		return writeJSON(io.Out(), rows)
	}
	tw := tabwriter.NewWriter(io.Out(), 0, 4, 2, ' ', 0)
	head := "NAME\tTAGS\tGPUS\tTIMEOUT\tRUNS IN\tCOMMAND"
	if opts.vendor != "" {
		head = "NAME\tTAGS\tGPUS\tTIMEOUT\tDOCKERFILE\tRUNS IN\tCOMMAND"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		gpus := r.NGPUs
		if gpus == "" || gpus == "-1" {
			gpus = "all"
		}
		in := "-" // a program of the image, run from the workspace
		if r.RunDir != "" {
			in = "copy of " + r.RunDir
		}
		if opts.vendor != "" {
			df := r.Dockerfile
			if df == "" {
				df = "- (see the warning)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.Tags, ","), gpus, r.Timeout, df, in, strings.Join(r.Command, " "))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.Tags, ","), gpus, r.Timeout, in, strings.Join(r.Command, " "))
	}
	return tw.Flush()
}
