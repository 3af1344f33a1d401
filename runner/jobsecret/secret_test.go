package jobsecret

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
)

func TestEnvSecret(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    string
		set     bool
		wantErr string
	}{
		{map[string]string{}, "", false, ""},
		{map[string]string{"BENCHCTL_JOB_SECRET": " 0123456789abcdef \n"}, "0123456789abcdef", true, ""},
		{map[string]string{"BENCHCTL_JOB_SECRET": "   "}, "", false, "is set but blank"},
		{map[string]string{"BENCHCTL_JOB_SECRET": "               x"}, "", false, "shorter than 16 characters"},
		{map[string]string{"BENCHCTL_JOB_SECRET": "short"}, "", false, "shorter than 16 characters"},
	} {
		v, set, err := Env(testutil.LookupOf(c.env))
		if v != c.want || set != c.set || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%q: got %q %v %v", c.env["BENCHCTL_JOB_SECRET"], v, set, err)
		}
	}
	// The run uses it as the key; a blank one is not silently replaced by a derived key.
	if _, err := Of(context.Background(), testutil.LookupOf(map[string]string{"BENCHCTL_JOB_SECRET": " "}), nil, Node{}, func(string) {}); err == nil {
		t.Error("a blank secret fell back to a derived one")
	}
}

// An existing .barrier-secret was trusted whatever its owner, mode or type: a file another
// user planted (or could read) let them into the job channel.
func TestSecretFileMustBePrivate(t *testing.T) {
	good := strings.Repeat("ab", 32)
	cases := []struct {
		name string
		make func(t *testing.T, p string)
		want string
	}{
		{"readable by others", func(t *testing.T, p string) { os.WriteFile(p, []byte(good), 0o644); os.Chmod(p, 0o644) }, "mode 0644: group or others may read or write it"},
		{"a link", func(t *testing.T, p string) {
			other := filepath.Join(t.TempDir(), "s")
			os.WriteFile(other, []byte(good), 0o600)
			os.Symlink(other, p)
		}, "is a symbolic link, not a regular file"},
		{"a FIFO", func(t *testing.T, p string) { syscall.Mkfifo(p, 0o600) }, "is a FIFO (named pipe), not a regular file"},
		{"another user's", func(t *testing.T, p string) {
			if os.Getuid() != 0 {
				t.Skip("needs root to give the file away")
			}
			os.WriteFile(p, []byte(good), 0o600)
			os.Chown(p, 65534, 65534)
		}, "owned by uid 65534, not by this user (uid 0)"},
	}
	for _, c := range cases {
		for _, rank := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s, rank %d", c.name, rank), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { // "at once" on the bubble's clock: no time at all
					job := testJobFolder(t)
					c.make(t, filepath.Join(job.Path, jobdir.SecretFile))
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					start := time.Now()
					_, err := Of(ctx, func(string) (string, bool) { return "", false }, job, Node{Rank: rank, World: 2}, func(string) {})
					if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "remove the file") {
						t.Fatalf("err = %v, want %q", err, c.want)
					}
					var inv interface{ InvalidInput() bool }
					if !errors.As(err, &inv) {
						t.Errorf("not bad input (exit 4): %T", err)
					}
					if d := time.Since(start); d != 0 {
						t.Errorf("took %s: a bad file must stop the wait at once", d)
					}
				})
			})
		}
	}
	job := testJobFolder(t)
	os.WriteFile(filepath.Join(job.Path, jobdir.SecretFile), []byte(good+"\n"), 0o600)
	s, err := Of(context.Background(), func(string) (string, bool) { return "", false }, job, Node{Rank: 1, World: 2}, func(string) {})
	if err != nil || string(s) != good {
		t.Fatalf("a private secret file: %q, %v", s, err)
	}
}
