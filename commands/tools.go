package commands

import (
	"context"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// ToolFlags are run's and submit's --tools and --tools-file (madengine's tools: profilers
// and tracers the benchmarks run under).
type ToolFlags struct {
	Names []string
	File  string
	Set   bool // --tools was given (an empty value clears the manifest's tools)
}

// apply resolves the tools into the manifest (invalid input: exit 4).
func (t *ToolFlags) apply(ctx context.Context, m *manifest.Manifest) error {
	o := models.ToolOptions{File: t.File}
	if t.Set {
		o.Names = append([]string{}, t.Names...)
	}
	return models.ApplyTools(ctx, m, o)
}
