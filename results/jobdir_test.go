package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindJob(t *testing.T) {
	shared := "testdata/shared"
	cases := []struct {
		name    string
		shared  string
		job     string
		attempt int
		dir     string
		wantErr string
	}{
		{name: "first attempt only", shared: shared, job: "100", attempt: -1, dir: "100"},
		{name: "latest attempt of a requeued job", shared: shared, job: "500", attempt: -1, dir: "500.1"},
		{name: "attempt 0 asked for", shared: shared, job: "500", attempt: 0, dir: "500"},
		{name: "attempt 1 asked for", shared: shared, job: "500", attempt: 1, dir: "500.1"},
		{name: "no such attempt", shared: shared, job: "500", attempt: 7, wantErr: "job 500 has no attempt 7 (attempts found: 0, 1)"},
		{name: "no such job lists the jobs", shared: shared, job: "999", attempt: -1, wantErr: "no job 999 in testdata/shared/jobs; jobs there: 600, 500, 400, 300, 200, 100"},
		{name: "no shared dir", shared: "testdata/nope", job: "1", attempt: -1, wantErr: "no jobs folder in the shared directory testdata/nope"},
		{name: "a path is not a job id", shared: shared, job: "../100", attempt: -1, wantErr: "is not a job id"},
		{name: "empty job id", shared: shared, job: "", attempt: -1, wantErr: "is not a job id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := FindJob(c.shared, c.job, c.attempt)
			if c.wantErr != "" {
				var nf *JobNotFoundError
				if !errors.As(err, &nf) || !nf.InvalidInput() || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want a *JobNotFoundError with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(d.Path) != c.dir {
				t.Fatalf("path %s, want %s", d.Path, c.dir)
			}
		})
	}
}

func TestFindJobEmptyJobsFolder(t *testing.T) {
	shared := t.TempDir()
	os.MkdirAll(filepath.Join(shared, "jobs"), 0o755)
	_, err := FindJob(shared, "1", -1)
	if err == nil || !strings.Contains(err.Error(), "the jobs folder is empty") {
		t.Fatalf("err = %v", err)
	}
}

func TestJobDirName(t *testing.T) {
	if JobDirName("7", 0) != "7" || JobDirName("7", 2) != "7.2" {
		t.Fatal("JobDirName")
	}
	for name, want := range map[string]struct {
		id string
		n  int
	}{"7": {"7", 0}, "7.2": {"7", 2}, "local-1.x": {"local-1.x", 0}, "7.0": {"7.0", 0}} {
		if id, n := splitJobDirName(name); id != want.id || n != want.n {
			t.Errorf("splitJobDirName(%q) = %q %d", name, id, n)
		}
	}
}

// A job whose own id ends in .<n> (written by an older benchctl, or by hand) is found by its
// exact name and is not taken for an attempt of another job; linked job folders count.
func TestFindJobDottedIDsAndLinks(t *testing.T) {
	shared := t.TempDir()
	jobs := filepath.Join(shared, "jobs")
	for _, d := range []string{"abc", "abc.2", "abc.1", "real"} {
		os.MkdirAll(filepath.Join(jobs, d), 0o755)
	}
	os.WriteFile(filepath.Join(jobs, "abc.2", "job.json"), []byte(`{"job": "abc.2"}`), 0o644)
	os.WriteFile(filepath.Join(jobs, "abc.1", "job.json"), []byte(`{"job": "abc", "attempt": 1}`), 0o644)
	os.Symlink(filepath.Join(jobs, "real"), filepath.Join(jobs, "linked"))
	for job, want := range map[string]string{"abc": "abc.1", "abc.2": "abc.2", "linked": "linked"} {
		d, err := FindJob(shared, job, -1)
		if err != nil || filepath.Base(d.Path) != want {
			t.Errorf("FindJob(%q) = %s, %v; want %s", job, d.Path, err, want)
		}
	}
}
