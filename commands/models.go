package commands

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
)

// ModelsListOptions are benchctl models list's flags.
type ModelsListOptions struct {
	Catalog    string
	Tags       []string
	Output     string
	Vendor     string
	GuestOS    string
	Generators bool
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

// ModelsList lists a MAD catalog's models.
func ModelsList(ctx context.Context, io iostreams.Streams, opts *ModelsListOptions) error {
	c, err := models.LoadCheckoutCatalog(ctx, opts.Catalog, models.Discovery{RunGenerators: opts.Generators})
	if err != nil {
		return err
	}
	for _, w := range c.Warnings {
		slog.Debug(w)
	}
	list := c.Models
	if len(opts.Tags) > 0 {
		var warns []string
		list, warns, err = c.Select(opts.Tags, nil)
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
		if opts.Vendor != "" {
			df, err := models.ResolveDockerfile(filepath.Dir(c.Path), m.Name, m.Dockerfile, opts.Vendor, opts.GuestOS)
			if err != nil {
				row.DockerfileError = err.Error()
				slog.Warn(err.Error())
			} else if rel, rerr := filepath.Rel(filepath.Dir(c.Path), df); rerr == nil {
				row.Dockerfile = rel
			}
		}
		rows = append(rows, row)
	}
	if opts.Output == "json" {
		return writeJSON(io.Out(), rows)
	}
	tw := tabwriter.NewWriter(io.Out(), 0, 4, 2, ' ', 0)
	head := "NAME\tTAGS\tGPUS\tTIMEOUT\tRUNS IN\tCOMMAND"
	if opts.Vendor != "" {
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
		if opts.Vendor != "" {
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
