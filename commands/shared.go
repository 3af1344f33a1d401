package commands

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// SharedDir resolves the shared directory: --shared-dir, else $BENCHCTL_SHARED_DIR, else a
// per-user default for single-machine use (logged, never silent).
func SharedDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if env := os.Getenv("BENCHCTL_SHARED_DIR"); env != "" {
		return filepath.Abs(env)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", exitcode.Usagef("set BENCHCTL_SHARED_DIR to a folder every node can see", "no shared directory: give --shared-dir or set BENCHCTL_SHARED_DIR (%v)", err)
	}
	dir := filepath.Join(base, "benchctl")
	slog.Info("using the default shared directory (single machine); set BENCHCTL_SHARED_DIR or --shared-dir on a cluster", "dir", dir)
	return dir, nil
}

// loadManifest loads a manifest (with catalog import) from the process environment and logs
// its warnings: what every command that takes --manifest does.
func loadManifest(path string) (*manifest.Manifest, error) {
	m, warnings, err := models.Open(path, os.LookupEnv)
	for _, w := range warnings {
		slog.Warn(w)
	}
	return m, err
}
