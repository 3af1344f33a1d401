package commands

import (
	"github.com/benchctl/benchctl/manifest"
)

// engineKind is the engine asked for: --engine, else the manifest's engine: ("": any).
func engineKind(flag string, m *manifest.Manifest) string {
	if flag != "" || m == nil {
		return flag
	}
	return m.Engine
}
