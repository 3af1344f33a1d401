package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/spf13/cobra"
)

// Set by the linker: -X main.version=... -X main.commit=...
var (
	version = ""
	commit  = ""
)

type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && b.Commit == "" {
				b.Commit = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

func versionString() string {
	b := currentBuild()
	return fmt.Sprintf("%s (commit %s, %s, %s)", b.Version, b.Commit, b.GoVersion, b.Platform)
}

type versionOptions struct {
	output   string
	noEngine bool
}

func newVersionCmd(io streams) *cobra.Command {
	opts := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show benchctl's version and the Docker Engine it talks to",
		Long: `Show benchctl's version, commit and Go version, and identify the Docker Engine that
DOCKER_HOST points at (its ID, version and API version). An unreachable engine is reported,
not an error: 'version' always exits 0. --no-engine skips the engine.`,
		Example: `  benchctl version
  benchctl version --output json
  srun -N 3 benchctl version --output json   # one line per node: which engine each node uses`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput("--output", opts.output, "text", "json"); err != nil {
				return err
			}
			return versionRun(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&opts.noEngine, "no-engine", false, "do not contact the Docker Engine")
	return cmd
}

type versionReport struct {
	Client      buildInfo         `json:"client"`
	Engine      *image.EngineInfo `json:"engine,omitempty"`
	EngineError string            `json:"engineError,omitempty"`
}

func versionRun(ctx context.Context, io streams, opts *versionOptions) error {
	rep := versionReport{Client: currentBuild()}
	if !opts.noEngine {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if c, err := image.Connect(); err != nil {
			rep.EngineError = err.Error()
		} else {
			info, err := image.Describe(ctx, c)
			c.Close()
			if err != nil {
				rep.EngineError = err.Error()
			} else {
				rep.Engine = &info
			}
		}
	}
	if opts.output == "json" {
		return json.NewEncoder(io.out).Encode(rep)
	}
	c := rep.Client
	fmt.Fprintf(io.out, "benchctl %s\n  commit:   %s\n  go:       %s\n  platform: %s\n", c.Version, c.Commit, c.GoVersion, c.Platform)
	switch {
	case rep.Engine != nil:
		e := rep.Engine
		fmt.Fprintf(io.out, "engine %s\n  host:     %s\n  api:      %s\n  id:       %s\n  name:     %s\n", e.Version, e.Host, e.APIVersion, e.ID, e.Name)
	case rep.EngineError != "":
		fmt.Fprintf(io.out, "engine: unavailable: %s\n", rep.EngineError)
	}
	return nil
}
