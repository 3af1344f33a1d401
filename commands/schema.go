package commands

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
)

// SchemaFileName is the manifest schema's copy that `benchctl init` writes beside the
// manifest; the manifest's first line points editors at it.
const SchemaFileName = ".benchctl.schema.json"

// Schema prints the manifest's JSON Schema.
func Schema(io iostreams.Streams) error {
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
	p := filepath.Join(filepath.Dir(path), SchemaFileName)
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
