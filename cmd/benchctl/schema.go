package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
)

func newSchemaCmd(io iostreams.Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the manifest's JSON Schema, for editors",
		Long: `Print the JSON Schema (draft-07) of the manifest: every field with its type, allowed
values and description, built from benchctl's own types, so that it matches this version.

benchctl init writes a copy, ` + commands.SchemaFileName + `, beside the manifest it writes and names it on
the manifest's first line ("# yaml-language-server: $schema=./` + commands.SchemaFileName + `"):
editors that use yaml-language-server (VS Code's YAML extension, Neovim, Helix, Zed) then
complete and check the manifest. Write the copy again after upgrading benchctl. The schema
checks fields, types and allowed values; benchctl validate also checks files, ${VAR}s and
mounts.`,
		Example: `  benchctl schema > ` + commands.SchemaFileName + `   # beside a manifest, e.g. after an upgrade
  benchctl schema | jq .properties.gpu`,
		Args:    cobra.NoArgs,
		GroupID: "inspect",
		RunE: func(cmd *cobra.Command, args []string) error {
			return commands.Schema(io)
		},
	}
}
