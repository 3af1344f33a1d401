package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// toolFlags are run's and submit's --tools and --tools-file (madengine's tools: profilers
// and tracers the benchmarks run under).
type toolFlags struct {
	names []string
	file  string
	set   bool // --tools was given (an empty value clears the manifest's tools)
}

func (t *toolFlags) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&t.names, "tools", nil, "run every benchmark under these tools (madengine's profilers and tracers, comma-separated; the first innermost), instead of the manifest's tools")
	f.StringVar(&t.file, "tools-file", "", "a tools.json (madengine's format) whose tools win over the MAD checkout's scripts/common/tools.json and a tools.json beside the manifest")
	_ = cmd.MarkFlagFilename("tools-file", "json")
}

// apply resolves the tools into the manifest (invalid input: exit 4).
func (t *toolFlags) apply(ctx context.Context, m *manifest.Manifest) error {
	o := models.ToolOptions{File: t.file}
	if t.set {
		o.Names = append([]string{}, t.names...)
	}
	return models.ApplyTools(ctx, m, o)
}
