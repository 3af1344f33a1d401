package main

import (
	"os"
	"syscall"
	"testing"
)

// compare with one side that is a file (benchctl compare a.csv) says what compare takes:
// two perf.csv files, or one job against --against; not "is not a job id".
func TestCompareOneFile(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("BENCHCTL_SHARED_DIR", t.TempDir())
	if err := os.WriteFile("a.csv", []byte("model,metric,performance\na,x,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sides := "hint: benchctl compare OLD.csv NEW.csv (two perf.csv files, job folders or job ids), or benchctl compare JOBID (one job, against --against: its manifest's reference by default)\n"
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "benchctl: error: compare needs two sides to compare, or one job; got none\n" + sides},
		{[]string{"a", "b", "c"}, "benchctl: error: compare needs two sides to compare, or one job; got 3 arguments\n" + sides},
	} {
		code, out, errs := runMode(t, false, append([]string{"compare"}, c.args...)...)
		if code != exitInvalid || out != "" || errs != c.want {
			t.Errorf("compare %v: exit %d, stdout %q\n got %q\nwant %q", c.args, code, out, errs, c.want)
		}
	}
	if err := syscall.Mkfifo("pipe.csv", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ arg, want string }{
		{"pipe.csv", "benchctl: error: pipe.csv is neither a file nor a job folder, and compare compares two perf.csv files or one job\n" +
			"hint: give the file it is compared with: benchctl compare OLD.csv pipe.csv; or a job, compared against --against (its manifest's reference by default): benchctl compare JOBID\n"},
		{"a.csv", "benchctl: error: a.csv is a file, and compare compares two perf.csv files or one job\n" +
			"hint: give the file it is compared with: benchctl compare OLD.csv a.csv; or a job, compared against --against (its manifest's reference by default): benchctl compare JOBID\n"},
		{"missing.csv", "benchctl: error: missing.csv does not exist, and compare compares two perf.csv files or one job\n" +
			"hint: give the file it is compared with: benchctl compare OLD.csv missing.csv; or a job, compared against --against (its manifest's reference by default): benchctl compare JOBID\n"},
	} {
		for _, tty := range []bool{true, false} {
			code, out, errs := runMode(t, tty, "compare", c.arg)
			if code != exitInvalid || out != "" || errs != c.want {
				t.Errorf("compare %s (tty %v): exit %d, stdout %q\n got %q\nwant %q", c.arg, tty, code, out, errs, c.want)
			}
		}
	}
}
