package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/models"
	"github.com/spf13/cobra"
)

func newModelsCmd(io streams) *cobra.Command {
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
	catalog string
	tags    []string
	output  string
}

func newModelsListCmd(io streams) *cobra.Command {
	opts := &modelsListOptions{}
	cmd := &cobra.Command{
		Use:   "list --catalog FILE [--tags T,...]",
		Short: "List the models of a catalog, optionally selected by tags",
		Long: `List the models of a madengine/MAD models.json catalog with their tags, GPU count, timeout
and command. --tags selects models as madengine does: a model is listed when it has any of
the tags (a model's name also works as a tag; "all" lists everything).`,
		Example: `  benchctl models list --catalog models/models.json
  benchctl models list --catalog ../MAD/models.json --tags vllm,inference --output json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.catalog == "" {
				return usagef("give the catalog: benchctl models list --catalog models.json", "--catalog is required")
			}
			if err := checkOutput("--output", opts.output, "table", "json"); err != nil {
				return err
			}
			return modelsListRun(io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.catalog, "catalog", "", "models.json catalog file")
	cmd.Flags().StringSliceVar(&opts.tags, "tags", nil, "select models with any of these tags (comma-separated; all = every model)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "output format: table or json")
	_ = cmd.MarkFlagFilename("catalog", "json")
	return cmd
}

type modelRow struct {
	Name     string   `json:"name"`
	Tags     []string `json:"tags"`
	NGPUs    string   `json:"nGPUs,omitempty"`
	Timeout  string   `json:"timeout"`
	Command  []string `json:"command"`
	Results  string   `json:"results,omitempty"`
	Warnings []string `json:"-"`
}

func modelsListRun(io streams, opts *modelsListOptions) error {
	c, err := models.Load(opts.catalog)
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
	for _, m := range list {
		b, err := m.Benchmark(c.Path)
		if err != nil {
			return fmt.Errorf("%s:%d: %s: %w", c.Path, m.Line, m.Name, err)
		}
		rows = append(rows, modelRow{Name: m.Name, Tags: m.Tags, NGPUs: m.NGPUs, Timeout: time.Duration(b.Timeout).String(),
			Command: b.Command, Results: b.Results})
	}
	if opts.output == "json" {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTAGS\tGPUS\tTIMEOUT\tCOMMAND")
	for _, r := range rows {
		gpus := r.NGPUs
		if gpus == "" || gpus == "-1" {
			gpus = "all"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.Tags, ","), gpus, r.Timeout, strings.Join(r.Command, " "))
	}
	return tw.Flush()
}
