package main

import (
	"fmt"
	"os"

	"github.com/benchctl/benchctl/internal/iostreams"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newGenDocsCmd is the hidden command behind `make docs` and `make man`.
func newGenDocsCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs markdown|man DIR",
		Short:  "Generate the CLI reference (markdown) or man pages",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[1], 0o755); err != nil {
				return err
			}
			root.DisableAutoGenTag = true // reproducible output: no date
			switch args[0] {
			case "markdown":
				return doc.GenMarkdownTree(root, args[1])
			case "man":
				return doc.GenManTree(root, &doc.GenManHeader{Section: "1", Source: "benchctl", Manual: "benchctl manual"}, args[1])
			}
			return usagef("use markdown or man", "unknown format %q", args[0])
		},
	}
}

// genDocsTo writes the markdown reference of a fresh command tree (for the staleness test).
func genDocsTo(dir string) error {
	root, _ := newRootCmd(iostreams.New(nil, os.Stdout, os.Stderr))
	root.InitDefaultHelpCmd() // cobra adds these when it executes; generate what users see
	root.InitDefaultCompletionCmd()
	root.DisableAutoGenTag = true
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("generating docs: %w", err)
	}
	return nil
}
