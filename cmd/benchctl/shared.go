package main

import (
	"github.com/spf13/cobra"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// sharedDir resolves the shared directory: --shared-dir, else $BENCHCTL_SHARED_DIR, else a
// per-user default for single-machine use (logged, never silent).
func sharedDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if env := os.Getenv("BENCHCTL_SHARED_DIR"); env != "" {
		return filepath.Abs(env)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", usagef("set BENCHCTL_SHARED_DIR to a folder every node can see", "no shared directory: give --shared-dir or set BENCHCTL_SHARED_DIR (%v)", err)
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

// manifestArgs is cobra.NoArgs for commands that take --manifest, with a hint when the
// manifest was given as an argument.
func manifestArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if ext := strings.ToLower(filepath.Ext(args[0])); ext == ".yaml" || ext == ".yml" || ext == ".json" {
		return usagef("benchctl "+cmd.Name()+" --manifest "+args[0], "the manifest is given with --manifest, not as an argument (got %q)", args[0])
	}
	return cobra.NoArgs(cmd, args)
}
