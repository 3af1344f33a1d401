//go:build unix

package jobsecret

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
)

// The submission's secret reaches benchctl run as a file name (BENCHCTL_JOB_SECRET_FILE,
// set by the sbatch script), and run reads it with the checks of the job folder's secret:
// a file someone else planted (a link, readable by others, another user's) is refused,
// where the script's `cat` used to pass any file on.
func TestSecretFileFromSubmit(t *testing.T) {
	good := strings.Repeat("cd", 32)
	dir := t.TempDir()
	p := filepath.Join(dir, "tok.secret")
	os.WriteFile(p, []byte(good+"\n"), 0o600)
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return testutil.LookupOf(m)
	}
	for _, rank := range []int{0, 1} {
		s, err := Of(context.Background(), env("BENCHCTL_JOB_SECRET_FILE", p), testJobFolder(t), Node{Rank: rank, World: 2}, func(string) {})
		if err != nil || string(s) != good {
			t.Fatalf("rank %d: %q, %v", rank, s, err)
		}
	}
	open := filepath.Join(dir, "open.secret")
	os.WriteFile(open, []byte(good), 0o644)
	os.Chmod(open, 0o644)
	link := filepath.Join(dir, "link.secret")
	os.Symlink(p, link)
	for name, c := range map[string]struct{ path, want string }{
		"readable by others": {open, "mode 0644"},
		"a link":             {link, "symbolic link"},
		"missing":            {filepath.Join(dir, "nope"), "no such file"},
		"blank":              {"  ", "is set but blank"},
	} {
		_, err := Of(context.Background(), env("BENCHCTL_JOB_SECRET_FILE", c.path), testJobFolder(t), Node{Rank: 1, World: 2}, func(string) {})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "BENCHCTL_JOB_SECRET_FILE") {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		var inv interface{ InvalidInput() bool }
		if !errors.As(err, &inv) {
			t.Errorf("%s: not bad input (exit 4): %T", name, err)
		}
	}
}
