package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// manifestArgs is cobra.NoArgs for commands that take --manifest, with a hint when the
// manifest was given as an argument.
func manifestArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if ext := strings.ToLower(filepath.Ext(args[0])); ext == ".yaml" || ext == ".yml" || ext == ".json" {
		return usagef("benchctl "+cmd.Name()+" --manifest "+args[0], "the manifest is given with --manifest, not as an argument (got %q)", args[0])
	}
	return cobra.NoArgs(cmd, args)
}
