package models

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// ToolOptions say which tools a run applies and where else to find them.
type ToolOptions struct {
	Names []string // --tools: replaces the manifest's tools when not nil
	File  string   // --tools-file: a tools.json that wins over the others
}

// ToolSources are the tools.json files a manifest's tools come from, the weakest first:
// the MAD checkout's scripts/common/tools.json (the checkout of a --tags run, or the folder
// of the manifest's models.catalog), a tools.json beside the manifest, then file (--tools-file).
// Only file must exist.
func ToolSources(m *manifest.Manifest, file string) []string {
	var out []string
	add := func(p string) {
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	dir := filepath.Dir(m.Path)
	if m.Models != nil && m.Models.Catalog != "" {
		c := m.Models.Catalog
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		if st, err := os.Stat(c); (err == nil && !st.IsDir()) || (err != nil && strings.HasSuffix(c, ".json")) {
			c = filepath.Dir(c)
		}
		add(filepath.Join(c, filepath.FromSlash(ToolsJSON)))
	}
	if filepath.Base(m.Path) == "models.json" || filepath.Base(m.Path) == ".benchctl-checkout.json" { // a --tags run
		add(filepath.Join(dir, filepath.FromSlash(ToolsJSON)))
	}
	add(filepath.Join(dir, "tools.json"))
	if file != "" {
		add(file)
	}
	return out
}

// ApplyTools resolves the tools the run uses (o.Names, else the manifest's tools) into
// m.ToolDefs, in the order given, after the tool a checkout run's context makes of its own
// scripts (manifest.ContextToolName, innermost) and with the context's changes to the
// tools it names (m.ToolContext). A tool is taken from the strongest source that has it
// (ToolSources). A name no source has, a source that does not parse, and a selected
// entry that is malformed or whose cmd needs a shell without saying "shell": true are
// invalid input (*document.Error), each naming the file and line; an unknown name lists
// the known tools with their files.
func ApplyTools(ctx context.Context, m *manifest.Manifest, o ToolOptions) error {
	names := m.Tools
	if o.Names != nil {
		names = nil
		for _, n := range o.Names {
			for _, w := range strings.Split(n, ",") {
				if w = strings.TrimSpace(w); w != "" {
					names = append(names, w)
				}
			}
		}
		m.Tools = names
	}
	if o.File != "" {
		if _, err := os.Stat(o.File); err != nil {
			return toolsError(o.File, 0, "", "--tools-file: no such file")
		}
	}
	m.ToolDefs = nil
	if ct := contextTool(m.ToolContext); ct != nil { // innermost, as madengine runs them
		m.ToolDefs = append(m.ToolDefs, *ct)
	}
	if len(names) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !manifest.ValidToolName(n) {
			return &document.Error{File: "--tools", Kind: "input", Problems: []document.Problem{{File: "--tools", Msg: fmt.Sprintf("%s is not a tool name (letters, digits, '.', '_', '+', '-')", document.Quote(n))}}}
		}
		if seen[n] {
			return &document.Error{File: "--tools", Kind: "input", Problems: []document.Problem{{File: "--tools", Msg: fmt.Sprintf("%s is given twice", document.Quote(n))}}}
		}
		seen[n] = true
	}
	var files []*ToolsFile
	var looked []string
	for _, p := range ToolSources(m, o.File) {
		if p != o.File {
			if _, err := os.Lstat(p); err != nil {
				looked = append(looked, p)
				continue
			}
		}
		tf, err := LoadTools(ctx, p)
		if err != nil {
			return err
		}
		files = append(files, tf)
	}
	e := &document.Error{File: "--tools", Kind: "input"}
	for _, n := range names {
		var from *ToolsFile
		for i := len(files) - 1; i >= 0 && from == nil; i-- {
			if _, ok := files[i].raw[n]; ok {
				from = files[i]
			}
		}
		if from == nil {
			e.Add(document.Problem{File: "tools", Msg: unknownTool(n, files, looked)})
			continue
		}
		t, err := from.Tool(n)
		if err != nil {
			return err
		}
		m.ToolDefs = append(m.ToolDefs, t)
	}
	if len(e.Problems) > 0 {
		return e
	}
	if m.ToolContext != nil {
		return applyOverrides(m.ToolDefs, m.ToolContext)
	}
	return nil
}

// unknownTool says that no source has the tool name, and which tools they have.
func unknownTool(name string, files []*ToolsFile, looked []string) string {
	if len(files) == 0 {
		return fmt.Sprintf("%s is not a known tool: there is no tools.json (looked for %s; give one with --tools-file)", document.Quote(name), strings.Join(looked, ", "))
	}
	var known []string
	n := 0
	for i := len(files) - 1; i >= 0; i-- {
		for _, t := range files[i].Names {
			if n++; n <= 50 {
				known = append(known, fmt.Sprintf("%s (%s)", t, files[i].Path))
			}
		}
	}
	if n > 50 {
		known = append(known, fmt.Sprintf("… and %d more", n-50))
	}
	return fmt.Sprintf("%s is not a known tool; known: %s", document.Quote(name), strings.Join(known, ", "))
}
