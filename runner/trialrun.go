package runner

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// trialRun is the trial a container runs in.
type trialRun struct {
	t manifest.Trial
	v manifest.Variant
}

// withTrial adds a trial's variables to a container: BENCHCTL_PARAM_<NAME> for each of the
// variant's parameters, BENCHCTL_VARIANT, BENCHCTL_TRIAL (the trial's number within the
// variant, warmups first) and BENCHCTL_WARMUP; the container's name and labels carry the
// trial, so that no two trials' containers share a name.
func withTrial(s Spec, v manifest.Variant, t manifest.Trial) Spec {
	env := make([]manifest.EnvVar, 0, len(s.Env)+len(v.Params)+3)
	for _, e := range s.Env {
		if !strings.HasPrefix(e.Name, "BENCHCTL_PARAM_") && e.Name != "BENCHCTL_VARIANT" && e.Name != "BENCHCTL_TRIAL" && e.Name != "BENCHCTL_WARMUP" {
			env = append(env, e)
		}
	}
	for _, p := range v.Params {
		env = append(env, manifest.EnvVar{Name: "BENCHCTL_PARAM_" + strings.ToUpper(p.Name), Value: p.Value})
	}
	env = append(env,
		manifest.EnvVar{Name: "BENCHCTL_VARIANT", Value: v.ID},
		manifest.EnvVar{Name: "BENCHCTL_TRIAL", Value: strconv.Itoa(t.N)},
		manifest.EnvVar{Name: "BENCHCTL_WARMUP", Value: strconv.FormatBool(t.Warmup)})
	sort.SliceStable(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	s.Env = env
	s.Name = fmt.Sprintf("%s-t%d", s.Name, t.Seq)
	labels := make(map[string]string, len(s.Labels)+1)
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[LabelTrial] = strconv.Itoa(t.Seq)
	s.Labels = labels
	return s
}

// LabelTrial is the label of a trial's container: the trial's place in the job's plan.
const LabelTrial = "io.benchctl.trial"

// trials walks an experiment's trial plan. Every rank walks every trial: before each
// benchmark of a trial the ranks meet (a job of several nodes), so that the variant's ranks
// start their containers together and no rank starts trial k+1 before every rank has
// finished trial k; a rank outside the variant (a variant of k nodes runs on ranks 0..k-1)
// only meets. A failure that aborts (onFailure, as for a job without an experiment, judged
// by the variant's node count) ends the job; with continue the job goes on to the next
// trial, the failed trial recorded as failed.
func (r *nodeRun) trials(ctx context.Context, eng Engine, x *manifest.Experiment, benches []manifest.Benchmark, imgs *distribution.Images, gpus *nodeGPUs) error {
	n := r.node
	end := r.st.Phase(jobdir.PhaseRun)
	defer r.removals.Wait() // no trial's container outlives the trials
	plan, err := r.trialPlan(x)
	if err != nil {
		end(err)
		return err
	}
	resume, err := r.shareResume(ctx, plan)
	if err != nil {
		end(err)
		return err
	}
	if resume > 0 {
		r.log.Info("requeued: resuming after the trials an earlier attempt finished", "after", resume, "of", len(plan))
	}
	var failed []string
	ran := 0
trials:
	for _, t := range plan {
		if t.Seq <= resume {
			continue
		}
		v := x.Variants[t.Variant]
		in := runsIn(v, n.Rank)
		for i, b := range variantBenchmarks(v, benches) {
			if n.World > 1 {
				if err := r.phase(ctx, fmt.Sprintf("trial:%d:%d", t.Seq, i), nil); err != nil {
					end(err)
					return err
				}
			}
			if ctx.Err() != nil {
				break trials
			}
			if !in {
				continue
			}
			tr := &trialRun{t: t, v: v}
			if gpus.skips[i] != "" {
				if err := r.st.AddTrial(BenchmarkStatus{Name: b.Name, Outcome: OutcomeSkipped, Error: gpus.skips[i],
					Trial: t.Seq, Variant: v.ID, VariantTrial: t.N, Warmup: t.Warmup}); err != nil {
					r.log.Warn("the skipped trial's record could not be appended to the trial log; it is in status.json", "trial", t.Seq, "err", err)
				}
				continue
			}
			ran++
			res := r.runOne(ctx, eng, b, imgs.For(b.Name), gpus.access[i], tr)
			if res.Outcome == OutcomeSuccess || res.Outcome == OutcomeAborted {
				continue
			}
			failed = append(failed, fmt.Sprintf("%s (trial %d: variant %s, trial %d)", b.Name, t.Seq, v.ID, t.N))
			world := v.Nodes
			if world == 0 {
				world = n.World
			}
			if b.Aborts(world) && ctx.Err() == nil {
				r.failBenchmark(b, res)
				break trials
			}
		}
	}
	if len(failed) > 0 {
		shown := failed
		if len(shown) > 5 {
			shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(failed)-5))
		}
		err := &RunError{Msg: fmt.Sprintf("%d of %d trial runs failed on %s: %s", len(failed), ran, n.Host, strings.Join(shown, ", "))}
		end(err)
		return err
	}
	if ctx.Err() != nil {
		err := context.Cause(ctx)
		end(err)
		return err
	}
	end(nil)
	return nil
}

// trialPlan is the experiment's plan: rank 0's own; the other ranks read it from job.json,
// which rank 0 wrote before the job's nodes met (they never shuffle for themselves).
func (r *nodeRun) trialPlan(x *manifest.Experiment) ([]manifest.Trial, error) {
	if r.node.Rank == 0 {
		return r.plan, nil
	}
	j, err := jobdir.ReadJob(r.dir.JobFile())
	if err != nil {
		return nil, fmt.Errorf("reading the trial plan rank 0 wrote: %w", err)
	}
	plan, err := x.PlanOf(j.TrialOrder)
	if err != nil {
		return nil, fmt.Errorf("the trial plan in %s: %w", r.dir.JobFile(), err)
	}
	return plan, nil
}
