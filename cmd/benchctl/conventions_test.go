package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/iostreams"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flag vocabulary of docs/cli-conventions.md, checked on every command the root command
// has, whichever they are: a command added later is held to the same rules.

// formatDefaults are the commands whose -o default is not table: the documented exceptions.
var formatDefaults = map[string]string{
	"benchctl validate": "yaml", // prints a manifest, not a table
}

// knownFormats are the values -o may take anywhere.
var knownFormats = []string{"table", "json", "yaml", "csv", "markdown", "openmetrics"}

// enumFlags take one of a few values (or, --tags, names from a catalog): they complete.
var enumFlags = []string{"output", "builder", "engine-builder", "vendor", "gpu-vendor", "amd-source",
	"log-format", "log-level", "metric-direction", "outcome", "tags"}

// fileFlags take a file and complete file names; dirFlags take a folder and complete folders.
var (
	fileFlags = []string{"manifest", "record", "catalog", "dockerfile", "file", "append", "baseline", "context-file"}
	dirFlags  = []string{"shared-dir", "sysfs-root"}
)

// walkCommands calls fn for root and every command under it, cobra's help and completion
// commands and hidden ones (gen-docs, __complete) left out.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	if c.Hidden || (c.HasParent() && c.Parent() == c.Root() && (c.Name() == "help" || c.Name() == "completion")) {
		return
	}
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}

func conventionsRoot() *cobra.Command {
	root, _ := newRootCmd(iostreams.New(nil, &bytes.Buffer{}, &bytes.Buffer{}))
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

// completionsOf is what flag completes to on c with nothing typed.
func completionsOf(c *cobra.Command, flag string) ([]string, bool) {
	fn, ok := c.GetFlagCompletionFunc(flag)
	if !ok {
		return nil, false
	}
	values, _ := fn(c, nil, "")
	return values, true
}

func TestEveryCommandHasHelpAndExample(t *testing.T) {
	n := 0
	walkCommands(conventionsRoot(), func(c *cobra.Command) {
		n++
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: needs Short, Long and Example", c.CommandPath())
		}
	})
	if n < 15 {
		t.Fatalf("walked only %d commands", n)
	}
}

func TestFlagConventions(t *testing.T) {
	outputs := 0
	walkCommands(conventionsRoot(), func(c *cobra.Command) {
		path := c.CommandPath()
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Deprecated != "" || f.ShorthandDeprecated != "" {
				t.Errorf("%s --%s: marked deprecated with pflag, whose warning cobra prints on stdout; use deprecate()", path, f.Name)
			}
			if !f.Hidden && (f.Name == "format" || f.Name == "json") {
				t.Errorf("%s: --%s is visible; the output format is -o/--output", path, f.Name)
			}
			if !f.Hidden && f.Shorthand == "o" && f.Name != "output" {
				t.Errorf("%s: -o is --%s; -o is --output everywhere", path, f.Name)
			}
			if f.Name == "output" && !f.Hidden {
				outputs++
				checkOutputFlag(t, c, f)
			}
			if _, old := f.Value.(*oldSpelling); old {
				if !f.Hidden {
					t.Errorf("%s --%s: an old spelling, but visible", path, f.Name)
				}
				return // works as it did, for one release
			}
			if slices.Contains(enumFlags, f.Name) {
				if _, ok := c.GetFlagCompletionFunc(f.Name); !ok {
					t.Errorf("%s --%s: takes one of a few values but does not complete them", path, f.Name)
				}
			}
			if v, ok := f.Value.(*choice); ok && !f.Hidden {
				got, _ := completionsOf(c, f.Name)
				if !slices.Equal(got, v.values) {
					t.Errorf("%s --%s: completes %v, accepts %v", path, f.Name, got, v.values)
				}
				for _, value := range v.values {
					if !strings.Contains(f.Usage, value) {
						t.Errorf("%s --%s: the help %q does not list %q", path, f.Name, f.Usage, value)
					}
				}
			}
			if _, ok := f.Annotations[cobra.BashCompFilenameExt]; !ok && slices.Contains(fileFlags, f.Name) {
				t.Errorf("%s --%s: takes a file but does not complete file names (MarkFlagFilename)", path, f.Name)
			}
			if _, ok := f.Annotations[cobra.BashCompSubdirsInDir]; !ok && slices.Contains(dirFlags, f.Name) {
				t.Errorf("%s --%s: takes a folder but does not complete folders (MarkFlagDirname)", path, f.Name)
			}
		})
	})
	if outputs < 10 {
		t.Fatalf("found only %d commands with -o", outputs)
	}
}

// checkOutputFlag: -o/--output, a choice of known formats that completes them, lists them in
// its help, and defaults to table (or the command's documented exception).
func checkOutputFlag(t *testing.T, c *cobra.Command, f *pflag.Flag) {
	t.Helper()
	path := c.CommandPath()
	if f.Shorthand != "o" {
		t.Errorf("%s --output: shorthand %q, want o", path, f.Shorthand)
	}
	want := "table"
	if d, ok := formatDefaults[path]; ok {
		want = d
	}
	if f.DefValue != want {
		t.Errorf("%s --output: default %q, want %q", path, f.DefValue, want)
	}
	values, ok := completionsOf(c, "output")
	if !ok {
		t.Errorf("%s --output: does not complete its formats", path)
	}
	if !slices.Contains(values, f.DefValue) {
		t.Errorf("%s --output: completes %v, not its default %q", path, values, f.DefValue)
	}
	for _, v := range values {
		if !slices.Contains(knownFormats, v) {
			t.Errorf("%s --output: %q is not one of the formats %v", path, v, knownFormats)
		}
		if !strings.Contains(f.Usage, v) {
			t.Errorf("%s --output: the help %q does not list %q", path, f.Usage, v)
		}
	}
	if !strings.Contains(c.UsageString(), "-o, --output format") {
		t.Errorf("%s: the help does not show -o, --output format", path)
	}
}
