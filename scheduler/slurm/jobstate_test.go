package slurm

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// fakeSlurm answers squeue and scontrol from a table and records the calls.
type fakeSlurm struct {
	out   map[string]string // command name -> stdout
	err   map[string]error  // command name -> error
	calls [][]string
}

func (f *fakeSlurm) Output(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, append([]string{name}, args...))
	if err := f.err[name]; err != nil {
		return nil, err
	}
	return []byte(f.out[name]), nil
}

func exitErr(t *testing.T, stderr string) error {
	t.Helper()
	err := exec.Command("false").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Skip("no 'false' command to make an exit error")
	}
	ee.Stderr = []byte(stderr)
	return ee
}

func TestQueryJobState(t *testing.T) {
	invalid := func(t *testing.T) error { return exitErr(t, "slurm_load_jobs error: Invalid job id specified\n") }
	cases := []struct {
		name    string
		id      string
		out     map[string]string
		err     func(t *testing.T) map[string]error
		want    JobState
		active  bool
		wantErr string
		calls   int
	}{
		{name: "squeue knows it", id: "123", out: map[string]string{"squeue": "RUNNING\n"},
			want: JobState{Known: true, State: "RUNNING", Source: "squeue"}, active: true, calls: 1},
		{name: "array: any active task", id: "123", out: map[string]string{"squeue": "COMPLETED\nPENDING\n"},
			want: JobState{Known: true, State: "PENDING", Source: "squeue"}, active: true, calls: 1},
		{name: "squeue forgot it, scontrol knows", id: "123", out: map[string]string{"squeue": "",
			"scontrol": "JobId=123 JobName=x UserId=u(1) JobState=COMPLETED Reason=None ExitCode=0:0\n"},
			want: JobState{Known: true, State: "COMPLETED", Source: "scontrol"}, calls: 2},
		{name: "cancelled by user", id: "123", err: func(t *testing.T) map[string]error { return map[string]error{"squeue": invalid(t)} },
			out:  map[string]string{"scontrol": "JobId=123 JobState=CANCELLED Reason=None\n"},
			want: JobState{Known: true, State: "CANCELLED", Source: "scontrol"}, calls: 2},
		{name: "unknown to all three", id: "123", err: func(t *testing.T) map[string]error {
			return map[string]error{"squeue": invalid(t), "scontrol": invalid(t)}
		}, calls: 3},
		{name: "no slurm commands: sacct is not asked", id: "123", err: func(t *testing.T) map[string]error {
			return map[string]error{"squeue": exec.ErrNotFound, "scontrol": exec.ErrNotFound}
		}, calls: 2},
		{name: "slurmctld down, accounting has no record", id: "123", err: func(t *testing.T) map[string]error {
			return map[string]error{"squeue": exitErr(t, "slurm_load_jobs error: Unable to contact slurm controller"), "scontrol": exitErr(t, "Unable to contact slurm controller")}
		}, wantErr: "squeue: exit status 1: slurm_load_jobs error: Unable to contact slurm controller", calls: 3},
		{name: "slurmctld down, accounting knows", id: "123", out: map[string]string{"sacct": "COMPLETED\n"}, err: func(t *testing.T) map[string]error {
			return map[string]error{"squeue": exitErr(t, "Unable to contact slurm controller"), "scontrol": exitErr(t, "Unable to contact slurm controller")}
		}, want: JobState{Known: true, State: "COMPLETED", Source: "sacct"}, calls: 3},
		{name: "not a slurm job id: nothing is run", id: "local-20261123-1", calls: 0},
		{name: "an option is never passed on", id: "-a", calls: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSlurm{out: c.out}
			if c.err != nil {
				f.err = c.err(t)
			}
			got, err := QueryJobState(context.Background(), f, c.id)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got != c.want || got.Active() != c.active {
				t.Fatalf("got %+v (active %v), want %+v (active %v)", got, got.Active(), c.want, c.active)
			}
			if len(f.calls) != c.calls {
				t.Fatalf("calls %q", f.calls)
			}
			if len(f.calls) > 0 && !reflect.DeepEqual(f.calls[0], []string{"squeue", "-h", "-j", c.id, "-o", "%T"}) {
				t.Fatalf("squeue called as %q", f.calls[0])
			}
			if len(f.calls) > 1 && !reflect.DeepEqual(f.calls[1], []string{"scontrol", "show", "job", "-o", c.id}) {
				t.Fatalf("scontrol called as %q", f.calls[1])
			}
			if len(f.calls) > 2 && !reflect.DeepEqual(f.calls[2], []string{"sacct", "-j", c.id, "-n", "-X", "-P", "-o", "State"}) {
				t.Fatalf("sacct called as %q", f.calls[2])
			}
		})
	}
}

func TestJobStateActive(t *testing.T) {
	for state, active := range map[string]bool{"PENDING": true, "RUNNING": true, "COMPLETING": true, "SUSPENDED": true, "REQUEUED": true,
		"CONFIGURING": true, "COMPLETED": false, "FAILED": false, "TIMEOUT": false, "NODE_FAIL": false, "OUT_OF_MEMORY": false} {
		if got := (JobState{Known: true, State: state}).Active(); got != active {
			t.Errorf("%s: Active() = %v", state, got)
		}
	}
	if (JobState{State: "RUNNING"}).Active() {
		t.Error("an unknown job is not active")
	}
}

func TestExecCommanderRunsWithoutAShell(t *testing.T) {
	out, err := ExecCommander{}.Output(context.Background(), "echo", "$HOME;", "`id`")
	if err != nil {
		t.Skip("no echo:", err)
	}
	if string(out) != "$HOME; `id`\n" {
		t.Fatalf("%q: the arguments went through a shell", out)
	}
}
