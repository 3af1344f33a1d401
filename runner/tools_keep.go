package runner

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
)

// A container's tools' script moves its tools' directory (run_directory-<container> in the
// benchmark's working directory, often a MAD checkout every node shares) to the node's
// results when it reaches its end. A container killed before that (SIGKILL after its
// timeout's grace, a cancelled or aborted job) leaves the directory where it was; the node
// then moves it from the host, through the bind mount that holds the working directory.

// toolsHostDir is the host path of the spec's tools' directory, through the bind mount
// whose target holds it (the deepest one); "" when no mount holds it (it went with the
// container) or when it is in the output folder already.
func toolsHostDir(s Spec) string {
	if s.Tools == nil || !s.Tools.Wrapped || s.Workdir == "" {
		return ""
	}
	dir := s.Tools.Dir
	best := -1
	for i, m := range s.Mounts {
		t := path.Clean(m.Target)
		if (dir == t || strings.HasPrefix(dir, strings.TrimSuffix(t, "/")+"/")) && filepath.IsAbs(m.Source) &&
			(best < 0 || len(t) > len(path.Clean(s.Mounts[best].Target))) {
			best = i
		}
	}
	if best < 0 || path.Clean(s.Mounts[best].Target) == cmp.Or(s.Output, OutputDir) {
		return ""
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(dir, path.Clean(s.Mounts[best].Target)), "/")
	return filepath.Join(s.Mounts[best].Source, filepath.FromSlash(rel))
}

// rescueToolsDir moves what the container left of its tools' directory to
// resultsDir/run_directory: renamed when it can be, else copied (folders, files and links,
// never following one) and removed. It returns the host path it moved, "" when there was
// nothing; an error says what is left where.
func rescueToolsDir(s Spec, resultsDir string) (string, error) {
	src := toolsHostDir(s)
	if src == "" {
		return "", nil
	}
	st, err := os.Lstat(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return src, err
	case !st.IsDir(): // not what the script made: leave it
		return src, fmt.Errorf("%s is not a folder (%s): left where it is", src, st.Mode().Type())
	}
	dst := filepath.Join(resultsDir, "run_directory")
	if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) && os.Rename(src, dst) == nil {
		return src, nil
	}
	if err := copyTree(src, dst); err != nil {
		return src, fmt.Errorf("copying the tools' directory %s to %s: %w (it is left in the working directory)", src, dst, err)
	}
	if err := os.RemoveAll(src); err != nil {
		return src, fmt.Errorf("the tools' directory %s was copied to %s but is left in the working directory: %w (remove it by hand)", src, dst, err)
	}
	return src, nil
}

// copyTree copies src's folders, regular files and links into dst, never following a link;
// other files (FIFOs, sockets, devices) are skipped.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch t := d.Type(); {
		case t.IsDir():
			return os.MkdirAll(to, 0o755)
		case t&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			os.Remove(to)
			return os.Symlink(l, to)
		case t.IsRegular():
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := safefile.OpenNoFollow(from)
	if safefile.IsNotRegular(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	return safefile.CopyNew(in, to, st.Mode().Perm()|0o600, 0)
}
