package jobdir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sharedWithJobs makes a shared directory with the job folders 100 to 600 and 500.1.
func sharedWithJobs(t *testing.T) string {
	shared := filepath.Join(t.TempDir(), "shared")
	for i, d := range []string{"100", "200", "300", "400", "500", "500.1", "600"} {
		p := filepath.Join(shared, "jobs", d)
		os.MkdirAll(p, 0o755)
		at := time.Date(2026, 11, 20, 0, i, 0, 0, time.UTC)
		os.Chtimes(p, at, at)
	}
	os.MkdirAll(filepath.Join(shared, "jobs", ".submit"), 0o700)
	return shared
}

func TestFindJob(t *testing.T) {
	shared := sharedWithJobs(t)
	nope := filepath.Join(filepath.Dir(shared), "nope")
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
		{name: "no such job lists the jobs", shared: shared, job: "999", attempt: -1, wantErr: "/shared/jobs; jobs there: 600, 500, 400, 300, 200, 100"},
		{name: "no shared dir", shared: nope, job: "1", attempt: -1, wantErr: "no jobs folder in the shared directory " + nope},
		{name: "a path is not a job id", shared: shared, job: "../100", attempt: -1, wantErr: "is not a job id"},
		{name: "empty job id", shared: shared, job: "", attempt: -1, wantErr: "is not a job id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Layout{c.shared}.Find(c.job, c.attempt)
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
	_, err := Layout{shared}.Find("1", -1)
	if err == nil || !strings.Contains(err.Error(), "the jobs folder is empty") {
		t.Fatalf("err = %v", err)
	}
}

func TestName(t *testing.T) {
	if Name("7", 0) != "7" || Name("7", 2) != "7.2" {
		t.Fatal("Name")
	}
	for name, want := range map[string]struct {
		id string
		n  int
	}{"7": {"7", 0}, "7.2": {"7", 2}, "local-1.x": {"local-1.x", 0}, "7.0": {"7.0", 0}} {
		if id, n := SplitName(name); id != want.id || n != want.n {
			t.Errorf("SplitName(%q) = %q %d", name, id, n)
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
		d, err := Layout{shared}.Find(job, -1)
		if err != nil || filepath.Base(d.Path) != want {
			t.Errorf("FindJob(%q) = %s, %v; want %s", job, d.Path, err, want)
		}
	}
}

func TestList(t *testing.T) {
	shared := sharedWithJobs(t)
	got, err := Layout{shared}.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range got {
		ids = append(ids, j.ID)
	}
	// 500.1 folds into 500 and makes it newer than 400; .submit is hidden.
	if strings.Join(ids, " ") != "600 500 400 300 200 100" {
		t.Fatalf("List = %v", ids)
	}
	if got, err := (Layout{t.TempDir()}).List(); err != nil || len(got) != 0 {
		t.Fatalf("no jobs folder: %v %v", got, err)
	}
}

func TestLayoutPaths(t *testing.T) {
	l := Layout{"/s"}
	d := l.Job("12", 1)
	n := d.Node(3, "gpu7")
	for got, want := range map[string]string{
		l.Jobs(): "/s/jobs", l.Submit(): "/s/jobs/.submit", d.Path: "/s/jobs/12.1", d.JobFile(): "/s/jobs/12.1/job.json",
		d.Secret(): "/s/jobs/12.1/.barrier-secret", d.BarrierAddr(0): "/s/jobs/12.1/barrier.addr",
		d.BarrierAddr(64): "/s/jobs/12.1/barrier.addr.64", n.Path: "/s/jobs/12.1/nodes/3-gpu7", n.Status(): "/s/jobs/12.1/nodes/3-gpu7/status.json",
		n.Log("train"): "/s/jobs/12.1/nodes/3-gpu7/train.log", n.Results("train"): "/s/jobs/12.1/nodes/3-gpu7/results/train",
		n.Diagnostics("train"): "/s/jobs/12.1/nodes/3-gpu7/diagnostics/train", d.Output(PerfFile): "/s/jobs/12.1/perf.csv",
		l.Doctor(""): "/s/.doctor", l.Doctor("12.1"): "/s/.doctor/12.1", DoctorMarker(l.Doctor("12"), 3): "/s/.doctor/12/rank-3",
		NodeDisplay("3-gpu7"): "nodes/3-gpu7", NodeDisplay("3-gpu7", ResultsRel("b"), "b.csv"): "nodes/3-gpu7/results/b/b.csv",
		NodeDisplay("3-gpu7", LogName("b")): "nodes/3-gpu7/b.log",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	for name, want := range map[string]NodeDir{
		"3-gpu7":        {Rank: 3, Host: "gpu7"},
		"12-a-b.c":      {Rank: 12, Host: "a-b.c"},
		"x-gpu7":        {Rank: -1},
		"3-":            {Rank: -1},
		"1234567890-h":  {Rank: -1}, // ranks below a billion
		"-1-h":          {Rank: -1},
		".tmp-status":   {Rank: -1},
		"999999999-h.x": {Rank: 999999999, Host: "h.x"},
	} {
		got := d.NodeNamed(name)
		if got.Rank != want.Rank || got.Host != want.Host || got.Name != name {
			t.Errorf("NodeNamed(%q) = %+v, want rank %d host %q", name, got, want.Rank, want.Host)
		}
	}
}
