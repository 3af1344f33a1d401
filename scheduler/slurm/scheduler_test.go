package slurm

import (
	"context"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// Scheduler answers as QueryJobState and Wait do, in jobdir's terms, and tells Unsure of
// a forgotten job whose accounting cannot say, and of nothing else.
func TestSchedulerJobState(t *testing.T) {
	forgot := func(t *testing.T) map[string]error {
		return map[string]error{"squeue": exitErr(t, "slurm_load_jobs error: Invalid job id specified\n"),
			"scontrol": exitErr(t, "slurm_load_jobs error: Invalid job id specified\n")}
	}
	for _, c := range []struct {
		name   string
		out    map[string]string
		err    func(*testing.T) map[string]error
		want   jobdir.SchedulerState
		ended  bool
		unsure string
	}{
		{name: "running", out: map[string]string{"squeue": "RUNNING\n"},
			want: jobdir.SchedulerState{Known: true, State: "RUNNING", Active: true, Source: "squeue", Scheduler: "Slurm"}},
		{name: "completed, by sacct", err: forgot, out: map[string]string{"sacct": "COMPLETED\n"},
			want: jobdir.SchedulerState{Known: true, State: "COMPLETED", Source: "sacct", Scheduler: "Slurm"}, ended: true},
		{name: "accounting off", err: func(t *testing.T) map[string]error {
			m := forgot(t)
			m["sacct"] = exitErr(t, "sacct: Slurm accounting storage is disabled\n")
			return m
		}, unsure: AccountingOff},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSlurm{out: c.out}
			if c.err != nil {
				f.err = c.err(t)
			}
			unsure := ""
			s := Scheduler{Run: f, Timeout: time.Minute, Unsure: func(id string, st JobState) {
				if id != "123" {
					t.Errorf("Unsure told of job %q", id)
				}
				unsure = st.Accounting
			}}
			st, err := s.JobState(context.Background(), "123")
			if err != nil || st != c.want || st.Ended() != c.ended || unsure != c.unsure {
				t.Fatalf("JobState = %+v, %v (ended %v), unsure %q; want %+v (ended %v), unsure %q", st, err, st.Ended(), unsure, c.want, c.ended, c.unsure)
			}
		})
	}
}

func TestSchedulerWait(t *testing.T) {
	f := &fakeSlurm{out: map[string]string{"squeue": "COMPLETED\n"}}
	ticks := 0
	st, err := Scheduler{Run: f}.Wait(context.Background(), "123", func(jobdir.SchedulerState, error) { ticks++ })
	if err != nil || !st.Ended() || st.State != "COMPLETED" || ticks != 0 {
		t.Fatalf("Wait = %+v, %v after %d ticks", st, err, ticks)
	}
	f.out["squeue"] = "RUNNING\n"
	ctx, cancel := context.WithCancel(context.Background())
	st, err = Scheduler{Run: f}.Wait(ctx, "123", func(st jobdir.SchedulerState, _ error) {
		if !st.Active || st.State != "RUNNING" {
			t.Errorf("tick %+v", st)
		}
		cancel()
	})
	if err != context.Canceled || st.Ended() {
		t.Fatalf("Wait after cancel = %+v, %v", st, err)
	}
}
