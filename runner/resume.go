package runner

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// A requeued job with an experiment resumes after the last trial that an earlier attempt
// finished: rank 0 reads the previous attempt's folder (its job.json says which trials it
// had itself taken from the attempts before it), takes the longest prefix of the plan whose
// every trial ended (success, failure, timeout or skipped: anything but running, aborted or
// cancelled) on every rank of its variant, records in job.json where those trials are
// (trialSources), and tells the other ranks where to start. collect reads each trial from
// the attempt that ran it.

// resumePoint is the last trial of the plan that this attempt need not run again, and where
// the trials up to it are; 0 and nil for a first attempt, or when the previous attempt's
// folder cannot say.
func (r *nodeRun) resumePoint(x *manifest.Experiment, planp *[]manifest.Trial, benches []manifest.Benchmark) (int, []jobdir.TrialSource) {
	n := r.node
	if n.Attempt == 0 || x == nil {
		return 0, nil
	}
	prev := r.dir.OtherAttempt(n.Attempt - 1)
	// The previous attempt must be this user's own folder, not a link: a co-writer's
	// planted jobs/<id>.<n-1> could mark every trial done.
	if st, err := os.Lstat(prev.Path); err != nil || !st.IsDir() {
		r.log.Warn("requeued: the previous attempt's folder is not a folder; running every trial again", "folder", prev.Path)
		return 0, nil
	} else if uid, ok := safefile.Owner(st); ok && uid != os.Getuid() {
		r.log.Warn("requeued: the previous attempt's folder is another user's; running every trial again", "folder", prev.Path, "owner", uid)
		return 0, nil
	}
	pj, err := jobdir.ReadJob(prev.JobFile())
	if err != nil {
		r.log.Warn("requeued: the previous attempt's job.json is unreadable; running every trial again", "err", err)
		return 0, nil
	}
	if len(pj.TrialOrder) > 0 {
		// The earlier attempt's plan goes on, whatever this build would shuffle.
		p, err := x.PlanOf(pj.TrialOrder)
		if err != nil {
			r.log.Warn("requeued: the previous attempt's trial order does not fit the experiment; running every trial again", "err", err)
			return 0, nil
		}
		*planp = p
	}
	plan := *planp
	list, err := prev.ListNodes(pj)
	if err != nil {
		r.log.Warn("requeued: the previous attempt's node folders are unreadable; running every trial again", "err", err)
		return 0, nil
	}
	names := map[string]bool{}
	for _, b := range benches {
		names[b.Name] = true
	}
	// ended[seq][rank]: how many of the trial's benchmarks ended on the rank.
	ended := map[int]map[int]int{}
	for _, nf := range list.Nodes {
		var fr safefile.Reader
		st, err := jobdir.ReadNodeStatus(&fr, prev.NodeNamed(nf.Name)) // with its trial log
		if st == nil || st.Rank != nf.Rank {
			continue
		}
		if err != nil {
			r.log.Warn("requeued: a node's trial log of the previous attempt is damaged; its trials after the damage run again", "node", nf.Name, "err", err)
		}
		for _, b := range st.Benchmarks {
			if b.Trial == 0 || !names[b.Name] || !trialEnded(b.Outcome) {
				continue
			}
			if ended[b.Trial] == nil {
				ended[b.Trial] = map[int]int{}
			}
			ended[b.Trial][nf.Rank]++
		}
	}
	var sources []jobdir.TrialSource
	add := func(attempt, seq int) {
		if k := len(sources); k > 0 && sources[k-1].Attempt == attempt && sources[k-1].Last == seq-1 {
			sources[k-1].Last = seq
			return
		}
		sources = append(sources, jobdir.TrialSource{Attempt: attempt, First: seq, Last: seq})
	}
	done := 0
	for _, t := range plan {
		if a := pj.TrialAttempt(t.Seq); a >= 0 && a < n.Attempt {
			add(a, t.Seq)
			done = t.Seq
			continue
		}
		ranks := x.Variants[t.Variant].Nodes
		if ranks == 0 {
			ranks = n.World
		}
		all := true
		for rank := range ranks {
			if ended[t.Seq][rank] < len(benches) {
				all = false
				break
			}
		}
		if !all {
			break
		}
		add(n.Attempt-1, t.Seq)
		done = t.Seq
	}
	return done, sources
}

// trialEnded reports whether a trial's benchmark record says it ran to an end.
func trialEnded(outcome string) bool {
	switch outcome {
	case OutcomeSuccess, OutcomeFailure, OutcomeTimeout, OutcomeSkipped:
		return true
	}
	return false
}

// shareResume tells every rank where the trials start: rank 0 sends the resume point it
// found, the others take it. A value that is not a trial of the plan stops the node.
func (r *nodeRun) shareResume(ctx context.Context, plan []manifest.Trial) (int, error) {
	if r.node.World == 1 {
		return r.resume, nil
	}
	data, err := r.phaseData(ctx, "trials", map[string]string{"resume": strconv.Itoa(r.resume)})
	if err != nil {
		return 0, err
	}
	k, err := strconv.Atoi(data["resume"])
	if err != nil || k < 0 || k > len(plan) {
		err := fmt.Errorf("rank 0 sent %q as the trial to resume after; the plan has %d trials", data["resume"], len(plan))
		r.fail(err, exitcode.Failure)
		return 0, err
	}
	return k, nil
}
