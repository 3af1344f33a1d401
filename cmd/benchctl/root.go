package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// globalOptions are the flags every command has.
type globalOptions struct {
	logLevel  string
	logFormat string
}

// Execute runs benchctl with args and returns the exit code.
func Execute(ctx context.Context, args []string, io iostreams.Streams) int {
	root, started := newRootCmd(io)
	root.SetArgs(args)
	root.SetFlagErrorFunc(flagErrorIn(args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var usage *exitcode.UsageError
	if !*started && !errors.As(err, &usage) {
		// cobra failed before a command ran: unknown command, wrong arguments.
		err = &exitcode.UsageError{Msg: err.Error(), HintMsg: "run 'benchctl --help' or 'benchctl COMMAND --help'"}
	}
	if se := exitcode.Interrupted(ctx, err); se != nil && !errors.As(err, new(*exitcode.SignalError)) {
		err = fmt.Errorf("%w: %w", se, err) // say which signal stopped it
	}
	code := exitcode.OfContext(ctx, err)
	if logFormatOf(root, args) == "json" {
		printErrorJSON(io.ErrOut(), err, code, time.Now())
	} else {
		printError(io.ErrOut(), err)
	}
	return code
}

// logFormatOf is the --log-format the command line asked for, also when cobra stopped before
// parsing it (an unknown command or flag): the final error is then in the logs' format too.
func logFormatOf(root *cobra.Command, args []string) string {
	if f := root.PersistentFlags().Lookup("log-format"); f != nil && f.Changed {
		return f.Value.String()
	}
	format := ""
	for i, a := range args {
		switch {
		case a == "--":
			return format
		case a == "--log-format" && i+1 < len(args):
			format = args[i+1]
		case strings.HasPrefix(a, "--log-format="):
			format = strings.TrimPrefix(a, "--log-format=")
		}
	}
	return format
}

func newRootCmd(io iostreams.Streams) (*cobra.Command, *bool) {
	opts := &globalOptions{}
	started := false
	root := &cobra.Command{
		Use:   "benchctl",
		Short: "Declarative multi-node benchmark harness for GPU clusters",
		Long: `benchctl runs model benchmarks (training, inference, collectives) in Docker containers
across the nodes of a Slurm allocation, on AMD and NVIDIA GPUs, and turns the per-node
results into one trustworthy table.

A manifest pins the image (Dockerfile, build args), mounts, environment, GPU vendor and the
benchmarks. Without Slurm, every command works on a single machine with Docker.`,
		Example: `  benchctl validate --manifest models/dummy/benchmark.yaml
  benchctl models list --catalog models/models.json --tags example
  benchctl version`,
		Version:       commands.VersionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			started = true
			if err := quietLevel(cmd, opts); err != nil {
				return err
			}
			if err := setupLogging(io, opts); err != nil {
				return err
			}
			warnDeprecated(cmd)
			return nil
		},
	}
	root.SetOut(io.Out())
	root.SetErr(io.ErrOut())
	root.SetVersionTemplate("benchctl {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.StringVar(&opts.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&opts.logFormat, "log-format", "text", "log format on stderr: text or json")
	_ = root.RegisterFlagCompletionFunc("log-level", completeWords("debug", "info", "warn", "error"))
	_ = root.RegisterFlagCompletionFunc("log-format", completeWords("text", "json"))

	root.AddGroup(
		&cobra.Group{ID: "core", Title: "Benchmark commands:"},
		&cobra.Group{ID: "inspect", Title: "Inspection commands:"},
	)
	root.SetHelpCommandGroupID("inspect")
	root.SetCompletionCommandGroupID("inspect")
	for _, c := range []*cobra.Command{newBuildCmd(io, nil), newRunCmd(io, nil), newSubmitCmd(io, nil), newCollectCmd(io, nil), newJobsCmd(io, nil), newCancelCmd(io, nil), newCompareCmd(io, nil),
		newHistoryCmd(io, nil), newReferenceCmd(io, referenceRuns{}), newValidateCmd(io, nil), newModelsCmd(io, nil), newCacheCmd(io, cacheRuns{}), newInitCmd(io, initRuns{}), newCleanupCmd(io, nil)} {
		c.GroupID = "core"
		// submit's -q is sbatch's: --qos; its --quiet is long only.
		quietFlag(c, c.Name() != "submit")
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{newVersionCmd(io, nil), newDoctorCmd(io, nil), newGpusCmd(io, nil)} {
		c.GroupID = "inspect"
		if c.Name() == "doctor" { // it logs (the shared directory it uses, the record's warnings)
			quietFlag(c, true)
		}
		root.AddCommand(c)
	}
	root.AddCommand(newSchemaCmd(io)) // in the "inspect" group
	root.AddCommand(newGenDocsCmd(root))
	root.AddCommand(newJobArchiveCmd(io))
	root.AddCommand(newSelfCopyCmd(io))
	return root, &started
}

func setupLogging(io iostreams.Streams, opts *globalOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(opts.logLevel)); err != nil {
		return usagef("use --log-level debug, info, warn or error", "invalid --log-level %q", opts.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if err := checkOutput("--log-format", opts.logFormat, "text", "json"); err != nil {
		return err
	}
	switch {
	case opts.logFormat == "json":
		h = slog.NewJSONHandler(io.ErrOut(), hopts)
	case io.IsStderrTTY(): // a person reads it: short lines, no timestamp
		h = newCompactHandler(io.ErrOut(), hopts)
	default: // a pipe, a file, an sbatch log: full records
		h = slog.NewTextHandler(io.ErrOut(), hopts)
	}
	slog.SetDefault(slog.New(h))
	return nil
}

// quietFlag gives cmd and its subcommands -q/--quiet (--quiet alone without short): errors
// only. Every benchmark command has it (the inspection commands print what was asked for,
// and little else).
func quietFlag(cmd *cobra.Command, short bool) {
	const usage = "errors only: no progress, no log lines below ERROR (as --log-level error)"
	if short {
		cmd.PersistentFlags().BoolP("quiet", "q", false, usage)
		return
	}
	cmd.PersistentFlags().Bool("quiet", false, usage)
}

// quietLevel makes -q/--quiet the log level error: progress, which is shown only when info
// lines are (see newProgressPrinter), goes with it. With another --log-level it is invalid
// input.
func quietLevel(cmd *cobra.Command, opts *globalOptions) error {
	f := cmd.Flags().Lookup("quiet")
	if f == nil || f.Value.String() != "true" {
		return nil
	}
	if l := cmd.Flags().Lookup("log-level"); l != nil && l.Changed && !strings.EqualFold(opts.logLevel, "error") {
		return usagef("give one of them: -q is --log-level error", "-q/--quiet and --log-level %s are both given", opts.logLevel)
	}
	opts.logLevel = "error"
	return nil
}
