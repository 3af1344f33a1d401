//go:build linux

package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

func prepJob(shared string) *Job {
	return &Job{Name: "t", Nodes: 2, Benchctl: "/bin/benchctl", Manifest: "/m.yaml", SharedDir: shared}
}

// jobs/.submit that someone else planted (a link, open to the group or others, another
// user's) is refused: the job's secret would be written where they can read or replace
// it. Before, Prepare used any existing folder (MkdirAll) and followed links.
func TestPrepareRefusesAPlantedSubmitFolder(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, sub string)
		want string
	}{
		{"open to others", func(t *testing.T, sub string) { os.Mkdir(sub, 0o777); os.Chmod(sub, 0o777) }, "mode 0777"},
		{"open to the group", func(t *testing.T, sub string) { os.Mkdir(sub, 0o770); os.Chmod(sub, 0o770) }, "mode 0770"},
		{"a link", func(t *testing.T, sub string) { os.Symlink(t.TempDir(), sub) }, "symbolic link, not a folder"},
		{"another user's", func(t *testing.T, sub string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the folder away")
			}
			os.Mkdir(sub, 0o700)
			os.Chown(sub, 65534, 65534)
		}, "owned by uid 65534"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := t.TempDir()
			l := jobdir.Layout{Shared: shared}
			os.MkdirAll(l.Jobs(), 0o755)
			c.make(t, l.Submit())
			_, err := Prepare(prepJob(shared))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Prepare = %v, want %q", err, c.want)
			}
			if target, lerr := os.Readlink(l.Submit()); lerr == nil {
				if ents, _ := os.ReadDir(target); len(ents) != 0 {
					t.Fatalf("written through the link: %v", ents)
				}
			}
		})
	}
}

// A fresh .submit is made 0700, the secret 0600 and the script 0700, each created anew
// (O_EXCL): a file planted under the next token's name is never written through.
func TestPrepareCreatesPrivateFiles(t *testing.T) {
	shared := t.TempDir()
	j := prepJob(shared)
	script, err := Prepare(j)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{filepath.Dir(script): 0o700, j.SecretFile: 0o600, script: 0o700} {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %o", p, fi.Mode(), err, want)
		}
	}
	if b, _ := os.ReadFile(j.SecretFile); len(strings.TrimSpace(string(b))) != 64 {
		t.Errorf("secret %q", b)
	}
	body, _ := os.ReadFile(script)
	if strings.Contains(string(body), strings.TrimSpace(readOrEmpty(j.SecretFile))) {
		t.Error("the secret is in the script")
	}
}

func readOrEmpty(p string) string { b, _ := os.ReadFile(p); return string(b) }
