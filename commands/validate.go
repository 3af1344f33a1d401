package commands

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"

	"go.yaml.in/yaml/v3"
)

// ValidateOptions are benchctl validate's flags.
type ValidateOptions struct {
	Manifest string
	Output   string
}

// ResolvedHeader is the first line of validate's YAML: what follows is a report.
const ResolvedHeader = "# the resolved manifest: a report of what benchctl will use, not a manifest to read back"

// Validate checks a manifest and prints it resolved.
func Validate(ctx context.Context, io iostreams.Streams, opts *ValidateOptions) error {
	m, warnings, err := models.OpenContext(ctx, opts.Manifest, os.LookupEnv)
	for _, w := range warnings {
		slog.Warn(w)
	}
	if err != nil {
		return err
	}
	red := m.Redacted()
	if opts.Output == "json" {
		return writeJSON(io.Out(), red)
	}
	fmt.Fprintln(io.Out(), ResolvedHeader)
	enc := yaml.NewEncoder(io.Out())
	enc.SetIndent(2)
	if err := enc.Encode(red); err != nil {
		return fmt.Errorf("printing the manifest: %w", err)
	}
	return enc.Close()
}
