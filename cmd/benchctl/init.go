package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/manifest"
)

type initOptions struct {
	dockerfile string
	name       string
	output     string
}

func newInitCmd(io streams) *cobra.Command {
	opts := &initOptions{}
	cmd := &cobra.Command{
		Use:   "init [--dockerfile FILE] [--name NAME]",
		Short: "Write a commented starter manifest next to a Dockerfile",
		Long: `Write benchmark.yaml, a commented starter manifest, in the Dockerfile's folder (or --file).
It validates as written; edit the benchmark command and the commented fields you need. An
existing file is never overwritten.`,
		Example: `  benchctl init --dockerfile docker/train.Dockerfile --name llama-train
  benchctl init                      # uses ./Dockerfile`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return initRun(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.dockerfile, "dockerfile", "Dockerfile", "the Dockerfile the benchmark image is built from")
	cmd.Flags().StringVar(&opts.name, "name", "", "manifest name (default: from the Dockerfile's folder)")
	cmd.Flags().StringVar(&opts.output, "file", "", "where to write the manifest (default: benchmark.yaml beside the Dockerfile)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "old spelling of --file")
	deprecate(cmd, "output", func(v string) string { return "--file " + v })
	_ = cmd.MarkFlagFilename("file", "yaml", "yml")
	_ = cmd.MarkFlagFilename("dockerfile")
	return cmd
}

func initRun(ctx context.Context, io streams, opts *initOptions) error {
	df, err := filepath.Abs(opts.dockerfile)
	if err != nil {
		return err
	}
	if st, err := os.Stat(df); err != nil || st.IsDir() {
		return usagef("point --dockerfile at your Dockerfile", "no Dockerfile at %s", df)
	}
	out := opts.output
	if out == "" {
		out = filepath.Join(filepath.Dir(df), "benchmark.yaml")
	}
	out, _ = filepath.Abs(out)
	if ext := strings.ToLower(filepath.Ext(out)); ext != ".yaml" && ext != ".yml" {
		return usagef("name it benchmark.yaml (or .yml)", "--file %s: the starter manifest is YAML (with comments); give a .yaml or .yml path", out)
	}
	if st, err := os.Stat(filepath.Dir(out)); err != nil || !st.IsDir() {
		return usagef("create the folder first, or pick another --file", "--file %s: the folder %s does not exist", out, filepath.Dir(out))
	}
	rel, err := filepath.Rel(filepath.Dir(out), df)
	if err != nil {
		return err
	}
	name := opts.name
	if name == "" {
		name = manifest.SuggestName(filepath.Base(filepath.Dir(df)))
	}
	text, err := manifest.Starter(manifest.StarterOptions{Name: name, Dockerfile: filepath.ToSlash(rel), Schema: "./" + schemaFileName})
	if err != nil {
		return usagef("choose another --name", "%v", err)
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return usagef("remove it first or pick another path with --file", "%s already exists; benchctl init never overwrites", out)
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(io.out, out)
	if infoShown() {
		fmt.Fprintf(io.err, "wrote %s; check it with: benchctl validate --manifest %s\n", out, out)
	}
	if p, err := writeSchemaBeside(out); err != nil {
		if slog.Default().Enabled(context.Background(), slog.LevelWarn) {
			fmt.Fprintf(io.err, "warning: %v; for editor support, run: benchctl schema > %s\n", err, p)
		}
	} else if infoShown() {
		fmt.Fprintf(io.err, "wrote %s, the manifest's JSON Schema: editors read it to complete and check the manifest\n", p)
	}
	return nil
}
