package commands

import (
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
)

// engineKind is the engine asked for: --engine, else the manifest's engine: ("": any).
func engineKind(flag string, m *manifest.Manifest) string {
	if flag != "" || m == nil {
		return flag
	}
	return m.Engine
}

// applyRuntime makes m run on --runtime when it is given (checked as the manifest's own
// runtime: is); an --engine beside runtime process is refused, as the manifest's engine: is.
func applyRuntime(m *manifest.Manifest, runtime, engine string) error {
	if runtime != "" {
		if err := m.SetRuntime(runtime); err != nil {
			return err
		}
	}
	if m.Process() && engine != "" {
		return exitcode.Usagef("drop --engine: the process runtime uses no container engine", "--engine %s with runtime process", engine)
	}
	return nil
}
