package slurm

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// Once squeue and scontrol have forgotten a job (MinJobAge), sacct decides.
func TestQueryJobStateAsksSacct(t *testing.T) {
	long := strings.Repeat("X", 6000)
	cases := []struct {
		name       string
		out        string
		err        func(t *testing.T) error
		want       JobState
		active     bool
		wantErr    string
		accounting string // want.Accounting, checked with Detail below
		detail     string
	}{
		{name: "completed", out: "COMPLETED\n", want: JobState{Known: true, State: "COMPLETED", Source: "sacct"}},
		{name: "cancelled by a user", out: "CANCELLED by 0\n", want: JobState{Known: true, State: "CANCELLED", Source: "sacct"}},
		{name: "node failure", out: "NODE_FAIL\n", want: JobState{Known: true, State: "NODE_FAIL", Source: "sacct"}},
		{name: "still running by accounting", out: "RUNNING\n", want: JobState{Known: true, State: "RUNNING", Source: "sacct"}, active: true},
		{name: "array: any active task", out: "COMPLETED\nFAILED\nPENDING\nCOMPLETED\n",
			want: JobState{Known: true, State: "PENDING", Source: "sacct"}, active: true},
		{name: "many lines, all ended: the first", out: strings.Repeat("COMPLETED\n", 5000) + "TIMEOUT\n",
			want: JobState{Known: true, State: "COMPLETED", Source: "sacct"}},
		{name: "no record in the accounting", out: "", want: JobState{}},
		{name: "blank lines only", out: "\n  \n", want: JobState{}},
		{name: "accounting disabled (22.05: stderr, exit 1)", err: func(t *testing.T) error { return exitErr(t, "Slurm accounting storage is disabled\n") },
			accounting: AccountingOff, detail: "sacct: Slurm accounting storage is disabled"},
		{name: "accounting disabled (older: stdout, exit 0)", out: "SLURM accounting storage is disabled\n",
			accounting: AccountingOff, detail: "sacct: SLURM accounting storage is disabled"},
		{name: "no sacct command", err: func(*testing.T) error { return exec.ErrNotFound },
			accounting: AccountingOff, detail: "no sacct command"},
		{name: "slurmdbd down", err: func(t *testing.T) error {
			return exitErr(t, "sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection to host:localhost:6819: Connection refused\n"+
				"sacct: error: Sending PersistInit msg: Connection refused\nsacct: error: Problem talking to the database: Connection refused\n")
		}, accounting: AccountingDown, detail: "sacct: error: Problem talking to the database: Connection refused"},
		{name: "garbage", out: "hello world\n", wantErr: `sacct: unexpected output "hello world"`},
		{name: "a state among garbage", out: "COMPLETED\n<html>\n", wantErr: `sacct: unexpected output "<html>"`},
		{name: "a 6,000-character line", out: long + "\n", wantErr: `sacct: unexpected output "XXXX`},
		{name: "other failure", err: func(t *testing.T) error { return exitErr(t, "sacct: error: something else\n") },
			wantErr: "sacct: exit status 1: error: something else"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSlurm{out: map[string]string{"sacct": c.out}, err: map[string]error{
				"squeue": exitErr(t, "slurm_load_jobs error: Invalid job id specified\n"), "scontrol": exitErr(t, "slurm_load_jobs error: Invalid job id specified\n")}}
			if c.err != nil {
				f.err["sacct"] = c.err(t)
			}
			got, err := QueryJobState(context.Background(), f, "4242")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				if len(err.Error()) > 300 {
					t.Fatalf("error of %d bytes: %.300s", len(err.Error()), err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			c.want.Accounting, c.want.Detail = c.accounting, c.detail
			if got != c.want || got.Active() != c.active {
				t.Fatalf("got %+v (active %v), want %+v (active %v)", got, got.Active(), c.want, c.active)
			}
			if len(f.calls) != 3 || f.calls[2][0] != "sacct" {
				t.Fatalf("calls %q", f.calls)
			}
		})
	}
}

// squeue or scontrol knowing the job is enough: sacct is not asked.
func TestQueryJobStateSacctOnlyWhenForgotten(t *testing.T) {
	f := &fakeSlurm{out: map[string]string{"squeue": "", "scontrol": "JobId=1 JobState=COMPLETED\n", "sacct": "FAILED\n"}}
	got, err := QueryJobState(context.Background(), f, "1")
	if err != nil || got.Source != "scontrol" || len(f.calls) != 2 {
		t.Fatalf("%+v %v calls %q", got, err, f.calls)
	}
}
