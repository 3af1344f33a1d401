package jobsecret

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// The job folder was opened and checked; a co-writer of jobs/ then renames it away and
// puts a link to a folder of theirs in its place. Rank 0's secret must still go into the
// folder that was checked, never through the link where the co-writer could read it.
func TestSecretGoesIntoTheCheckedJobFolder(t *testing.T) {
	shared := t.TempDir()
	job, err := jobdir.Layout{Shared: shared}.CreateJob("7", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	path := job.Dir.Path
	moved := path + ".moved"
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	attacker := t.TempDir()
	if err := os.Symlink(attacker, path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	none := func(string) (string, bool) { return "", false }
	s, err := Of(ctx, none, job, Node{Rank: 0, World: 2}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(attacker, jobdir.SecretFile)); err == nil {
		t.Fatal("the secret was written into the linked folder")
	}
	got, err := os.ReadFile(filepath.Join(moved, jobdir.SecretFile))
	if err != nil || string(got) != string(s) {
		t.Fatalf("the checked folder's secret: %q, %v", got, err)
	}
	// A worker reads the secret of the folder it opened too, not what the link shows.
	os.WriteFile(filepath.Join(attacker, jobdir.SecretFile), []byte("0123456789abcdef0123456789abcdef-planted"), 0o600)
	w, err := Of(ctx, none, job, Node{Rank: 1, World: 2}, func(string) {})
	if err != nil || string(w) != string(s) {
		t.Fatalf("the worker read %q, %v; want rank 0's", w, err)
	}
}
