package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/benchctl/benchctl/gpu"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// Set by the linker: -X main.version=... -X main.commit=...
var (
	version = ""
	commit  = ""
)

type buildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	Modified   bool   `json:"modified,omitempty"`   // built from a work tree with uncommitted changes
	CommitTime string `json:"commitTime,omitempty"` // the commit's time (RFC 3339), when the Go toolchain recorded it
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
	GPUs       string `json:"gpus"` // what this build reads GPUs with (gpu.Build: cgo or not)
}

// CurrentBuild is this binary's version, commit and build.
func CurrentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildFrom(version, commit, bi)
}

// buildFrom is what benchctl says it is: the linker's -X main.version and main.commit (what
// make sets); where they are empty (a plain go build or go install), what the Go toolchain
// recorded in the binary (bi, nil when there is none): the module version unless it is
// "(devel)", and the vcs.revision, vcs.modified and vcs.time of the work tree it was built
// in (absent with -buildvcs=false). What neither knows is "dev" and "unknown".
func buildFrom(ldVersion, ldCommit string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Commit: ldCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, GPUs: gpu.Build}
	if bi != nil {
		if b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			b.Version = bi.Main.Version
		}
		if b.Commit == "" { // the vcs settings describe the recorded revision, not a commit given by -X
			vcs := map[string]string{}
			for _, s := range bi.Settings {
				vcs[s.Key] = s.Value
			}
			if rev := vcs["vcs.revision"]; rev != "" {
				b.Commit = rev
				b.Modified = vcs["vcs.modified"] == "true"
				b.CommitTime = vcs["vcs.time"]
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

// VersionString is this binary's version on one line.
func VersionString() string { return CurrentBuild().String() }

// String is the one-line version: "v1.2.0 (commit 0123abc, go1.26.8, linux/amd64)", with
// ", modified" after the commit when the work tree had uncommitted changes.
func (b buildInfo) String() string {
	commit := b.Commit
	if b.Modified {
		commit += ", modified"
	}
	return fmt.Sprintf("%s (commit %s, %s, %s)", b.Version, commit, b.GoVersion, b.Platform)
}

// VersionOptions are benchctl version's flags.
type VersionOptions struct {
	Output   string
	NoEngine bool
}

// VersionReport is what version -o json prints: the client, and the engine's identity.
type VersionReport struct {
	Client      buildInfo         `json:"client"`
	Engine      *image.EngineInfo `json:"engine,omitempty"`
	EngineError string            `json:"engineError,omitempty"`
}

// Version prints benchctl's version and the engine's.
func Version(ctx context.Context, io iostreams.Streams, opts *VersionOptions) error {
	rep := VersionReport{Client: CurrentBuild()}
	if !opts.NoEngine {
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
	if opts.Output == "json" {
		if severalNodesPrint(os.LookupEnv) {
			return json.NewEncoder(io.Out()).Encode(rep) // one line per node: srun interleaves lines
		}
		return writeJSON(io.Out(), rep)
	}
	c := rep.Client
	fmt.Fprintf(io.Out(), "benchctl %s\n  commit:   %s\n", c.Version, c.Commit)
	if c.CommitTime != "" || c.Modified {
		fmt.Fprintf(io.Out(), "  built:    %s\n", builtFrom(c))
	}
	fmt.Fprintf(io.Out(), "  go:       %s\n  platform: %s\n  gpus:     %s\n", c.GoVersion, c.Platform, c.GPUs)
	switch {
	case rep.Engine != nil:
		e := rep.Engine
		fmt.Fprintf(io.Out(), "engine %s\n  host:     %s\n  api:      %s\n  id:       %s\n  name:     %s\n", e.Version, e.Host, e.APIVersion, e.ID, e.Name)
	case rep.EngineError != "":
		fmt.Fprintf(io.Out(), "engine: unavailable: %s\n", rep.EngineError)
	}
	return nil
}

// builtFrom says what the work tree was: "commit of 2026-11-25T09:53:52Z, with uncommitted changes".
func builtFrom(c buildInfo) string {
	var parts []string
	if c.CommitTime != "" {
		parts = append(parts, "commit of "+c.CommitTime)
	}
	if c.Modified {
		parts = append(parts, "with uncommitted changes")
	}
	return strings.Join(parts, ", ")
}
