package results

import (
	"fmt"
	"path/filepath"
	"strconv"
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
		f.outcome, f.reason = "unreadable", "status.json unreadable: "+relErr(nd.statusErr, filepath.Join(a.dir.Path, "nodes", nd.dir), nd.dir)
		return nodeNoStatus, f
	case st == nil:
		f.outcome, f.reason = "no-status", "no status: status.json missing (benchctl run never started on the node, or its folder is incomplete)"
		return nodeNoStatus, f
	case st.Running():
		switch {
		case !a.dir.Latest():
			f.outcome = OutcomeCancelled
			f.reason = fmt.Sprintf("cut short while running: the job was requeued (attempt %d is newer)", a.dir.Attempts[len(a.dir.Attempts)-1])
			return nodeFailed, f
		case a.opts.Scheduler.Known && !a.opts.Scheduler.Active:
			f.outcome = "lost"
			f.reason = "status still says running, but Slurm says the job is " + a.opts.Scheduler.State + ": the node stopped without recording its end"
			return nodeFailed, f
		}
		return nodeRunning, f
	case st.Outcome == OutcomeSuccess:
		return nodeOK, f
	}
	f.outcome, f.exit = st.Outcome, int32(st.ExitCode)
	if f.outcome == "" || f.outcome == OutcomeRunning {
		f.outcome = OutcomeFailure
	}
	f.reason = describe(f.outcome, st.ExitCode, st.Error)
	if p := st.FailedPhase(); p != nil && st.Error == "" {
		f.reason = describe(f.outcome, st.ExitCode, "phase "+p.Name+" failed: "+p.Error)
	}
	return nodeFailed, f
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
func benchState(kind int, nf failRec, bs *BenchmarkStatus) (byte, failRec) {
	f := nf
	switch {
	case kind == nodeNoStatus:
	case bs != nil && bs.Outcome == OutcomeSuccess:
		return stOK, f
	case bs != nil && bs.Outcome == OutcomeSkipped:
		return stSkipped, f
	case kind == nodeRunning:
		return stRunning, f
	case bs != nil && (bs.Outcome == OutcomeFailure || bs.Outcome == OutcomeTimeout || bs.Outcome == OutcomeCancelled):
		f.outcome, f.exit, f.reason = bs.Outcome, int32(bs.ExitCode), describe(bs.Outcome, bs.ExitCode, bs.Error)
	case bs != nil:
		f.outcome, f.exit, f.reason = OutcomeFailure, int32(bs.ExitCode), fmt.Sprintf("did not finish (outcome %q)", bs.Outcome)
	case kind == nodeFailed:
	default:
		f.outcome, f.reason = OutcomeFailure, "no record of this benchmark in status.json"
	}
	return stFailed, f
}

// failureLinks are a failed benchmark's log and diagnostics folder, relative to the job
// folder (the status's own names when they are local paths). finish drops the ones that
// do not exist.
func failureLinks(dir, bench string, bs *BenchmarkStatus) (log, diag string) {
	log, diag = bench+".log", "diagnostics/"+bench
	if bs != nil {
		if bs.Log != "" && filepath.IsLocal(bs.Log) {
			log = filepath.ToSlash(bs.Log)
		}
		if bs.Diagnostics != "" && filepath.IsLocal(bs.Diagnostics) {
			diag = filepath.ToSlash(bs.Diagnostics)
		}
	}
	return "nodes/" + dir + "/" + log, "nodes/" + dir + "/" + diag
}
