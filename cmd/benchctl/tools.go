package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
)

// addToolFlags are --tools and --tools-file.
func addToolFlags(t *commands.ToolFlags, cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&t.Names, "tools", nil, "run every benchmark under these tools (madengine's profilers and tracers, comma-separated; the first innermost), instead of the manifest's tools")
	f.StringVar(&t.File, "tools-file", "", "a tools.json (madengine's format) whose tools win over the MAD checkout's scripts/common/tools.json and a tools.json beside the manifest")
	_ = cmd.MarkFlagFilename("tools-file", "json")
}
