package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
)

// schemaFileName is the manifest schema's copy that `benchctl init` writes beside the
// manifest; the manifest's first line points editors at it.
const schemaFileName = ".benchctl.schema.json"

func newSchemaCmd(io iostreams.Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the manifest's JSON Schema, for editors",
		Long: `Print the JSON Schema (draft-07) of the manifest: every field with its type, allowed
values and description, built from benchctl's own types, so that it matches this version.

benchctl init writes a copy, ` + schemaFileName + `, beside the manifest it writes and names it on
the manifest's first line ("# yaml-language-server: $schema=./` + schemaFileName + `"):
editors that use yaml-language-server (VS Code's YAML extension, Neovim, Helix, Zed) then
complete and check the manifest. Write the copy again after upgrading benchctl. The schema
checks fields, types and allowed values; benchctl validate also checks files, ${VAR}s and
mounts.`,
		Example: `  benchctl schema > ` + schemaFileName + `   # beside a manifest, e.g. after an upgrade
  benchctl schema | jq .properties.gpu`,
		Args:    cobra.NoArgs,
		GroupID: "inspect",
		RunE: func(cmd *cobra.Command, args []string) error {
			return schemaRun(io)
		},
	}
}

func schemaRun(io iostreams.Streams) error {
	b, err := manifest.Schema()
	if err != nil {
		return err
	}
	_, err = io.Out().Write(b)
	return err
}

// writeSchemaBeside writes the manifest schema as schemaFileName in the folder of the
// manifest at path (unless it is there already, unchanged) and returns its path.
func writeSchemaBeside(path string) (string, error) {
	p := filepath.Join(filepath.Dir(path), schemaFileName)
	b, err := manifest.Schema()
	if err != nil {
		return p, err
	}
	if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, b) {
		return p, nil
	}
	if err := atomicfile.WriteFile(p, b); err != nil {
		return p, fmt.Errorf("writing the manifest schema for editors: %w", err)
	}
	return p, nil
}
