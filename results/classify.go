package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// Kinds of node, from its status file.
const (
	nodeOK = iota
	nodeFailed
	nodeRunning
	nodeNoStatus // no status.json, or an unreadable one
)

// classify decides what a node's status says about the node as a whole.
func (a *aggregator) classify(nd *nodeData) (kind int, f failRec) {
	f = failRec{dir: nd.dir, host: nd.host, rank: int32(nd.rank)}
	st := nd.status
	switch {
	case nd.statusErr != nil:
		f.outcome, f.reason = "unreadable", "status.json unreadable: "+relErr(nd.statusErr, a.dir.NodeNamed(nd.dir).Path, nd.dir)
		return nodeNoStatus, f
	case st == nil:
		f.outcome, f.reason = "no-status", "no status: status.json missing (benchctl run never started on the node, or its folder is incomplete)"
		return nodeNoStatus, f
	case st.Running():
		switch {
		case !a.dir.Latest():
			f.outcome = jobdir.OutcomeCancelled
			f.reason = fmt.Sprintf("cut short while running: the job was requeued (attempt %d is newer)", a.dir.Attempts[len(a.dir.Attempts)-1])
			return nodeFailed, f
		case a.opts.Scheduler.Known && !a.opts.Scheduler.Active:
			f.outcome, f.reason = jobdir.OutcomeLost, a.lostReason(nd)
			return nodeFailed, f
		}
		return nodeRunning, f
	case st.Outcome == jobdir.OutcomeSuccess:
		return nodeOK, f
	}
	f.outcome, f.exit = st.Outcome, int32(st.ExitCode)
	if f.outcome == "" || f.outcome == jobdir.OutcomeRunning {
		f.outcome = jobdir.OutcomeFailure
	}
	f.reason = describe(f.outcome, st.ExitCode, st.Error)
	if p := st.FailedPhase(); p != nil && st.Error == "" {
		f.reason = describe(f.outcome, st.ExitCode, "phase "+p.Name+" failed: "+p.Error)
	}
	return nodeFailed, f
}

// lostReason writes "lost (last status 2026-11-23T10:01:00Z, phase run started): status.json
// still says running, but Slurm says the job is COMPLETED (sacct); ...".
func (a *aggregator) lostReason(nd *nodeData) string {
	at, what := lastRecord(nd.status)
	if at.IsZero() {
		if info, err := os.Stat(a.dir.NodeNamed(nd.dir).Status()); err == nil {
			at, what = info.ModTime(), "status.json last written"
		}
	}
	last := "unknown"
	if !at.IsZero() {
		last = at.UTC().Format(time.RFC3339) + ", " + what
	}
	sched := a.opts.Scheduler.Says() + " the job is " + a.opts.Scheduler.State
	if src := a.opts.Scheduler.Source; src != "" {
		sched += " (" + src + ")"
	}
	return fmt.Sprintf("lost (last status %s): status.json still says running, but %s; the node stopped without recording its end", last, sched)
}

// lastRecord is the latest moment a node's status records, and what happened then: the
// node's own clock, written with the event. It is preferred to status.json's modification
// time, which a copy or a restore of the job folder changes; the runner writes the file
// only when it records such an event, so the two agree for a folder left in place.
func lastRecord(st *jobdir.Status) (time.Time, string) {
	var at time.Time
	what := ""
	see := func(t *time.Time, s string) {
		if t != nil && !t.IsZero() && !t.Before(at) { // the later record of a tie
			at, what = *t, s
		}
	}
	see(&st.StartedAt, "node started")
	for i := range st.Phases {
		p := &st.Phases[i]
		see(&p.StartedAt, "phase "+p.Name+" started")
		see(p.FinishedAt, "phase "+p.Name+" ended")
	}
	for i := range st.Benchmarks {
		b := &st.Benchmarks[i]
		see(&b.StartedAt, "benchmark "+b.Name+" started")
		see(b.FinishedAt, "benchmark "+b.Name+" ended")
	}
	return at, what
}

// describe writes "timeout (exit 124): message".
func describe(outcome string, exit int, msg string) string {
	s := outcome
	if exit != 0 {
		s += " (exit " + strconv.Itoa(exit) + ")"
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// benchState decides what a node did with one benchmark, from the node's kind and the
// benchmark's record in its status (nil when there is none). A failure carries its reason.
func benchState(kind int, nf failRec, bs *jobdir.BenchmarkStatus) (byte, failRec) {
	f := nf
	switch {
	case kind == nodeNoStatus:
	case bs != nil && bs.Outcome == jobdir.OutcomeSuccess:
		return StateOK, f
	case bs != nil && bs.Outcome == jobdir.OutcomeSkipped:
		return StateSkipped, f
	case kind == nodeRunning:
		return StateRunning, f
	case bs != nil && bs.Outcome == jobdir.OutcomeAborted: // stopped because another node failed or was lost
		f.outcome, f.exit, f.reason = jobdir.OutcomeAborted, int32(bs.ExitCode), bs.Error
		if f.reason == "" {
			f.reason = "aborted"
		}
	case bs != nil && (bs.Outcome == jobdir.OutcomeFailure || bs.Outcome == jobdir.OutcomeTimeout || bs.Outcome == jobdir.OutcomeCancelled):
		f.outcome, f.exit, f.reason = bs.Outcome, int32(bs.ExitCode), describe(bs.Outcome, bs.ExitCode, bs.Error)
	case bs != nil && nf.outcome == jobdir.OutcomeLost: // under way when the node was lost
	case bs != nil:
		f.outcome, f.exit, f.reason = jobdir.OutcomeFailure, int32(bs.ExitCode), fmt.Sprintf("did not finish (outcome %q)", bs.Outcome)
	case kind == nodeFailed:
	default:
		f.outcome, f.reason = jobdir.OutcomeFailure, "no record of this benchmark in status.json"
	}
	return StateFailed, f
}

// failureLinks are a failed benchmark's log and diagnostics folder, relative to the job
// folder (the status's own names when they are local paths). finish drops the ones that
// do not exist.
func failureLinks(dir, bench string, bs *jobdir.BenchmarkStatus) (log, diag string) {
	log, diag = jobdir.LogName(bench), jobdir.DiagRel(bench)
	if bs != nil {
		if bs.Log != "" && filepath.IsLocal(bs.Log) {
			log = filepath.ToSlash(bs.Log)
		}
		if bs.Diagnostics != "" && filepath.IsLocal(bs.Diagnostics) {
			diag = filepath.ToSlash(bs.Diagnostics)
		}
	}
	return jobdir.NodeDisplay(dir, log), jobdir.NodeDisplay(dir, diag)
}
