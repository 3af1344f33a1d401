package manifest

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
)

// Trial is one run of a variant's benchmarks: the unit a job walks.
type Trial struct {
	// Seq is the trial's place in the job's plan, from 1.
	Seq int `json:"seq"`
	// Variant is the index of the variant in the experiment.
	Variant int `json:"variant"`
	// N is the trial's number within its variant, from 1: the warmups first (BENCHCTL_TRIAL).
	N int `json:"trial"`
	// Warmup trials are run and never counted (BENCHCTL_WARMUP).
	Warmup bool `json:"warmup,omitempty"`
}

// Plan is the order in which a job runs the trials of an experiment: interleave (trial 1
// of every variant, then trial 2, ...), sequential (every trial of a variant, then the next
// variant) or shuffle (a random order from seed, in which each variant's warmups still come
// before its measured trials and its trial numbers still count up). Every node computes the
// same plan from the same manifest and seed.
func (x *Experiment) Plan(seed int64) []Trial {
	per := x.Warmup + x.Repeat
	plan := make([]Trial, 0, len(x.Variants)*per)
	add := func(v, n int) {
		plan = append(plan, Trial{Seq: len(plan) + 1, Variant: v, N: n, Warmup: n <= x.Warmup})
	}
	switch x.Order {
	case OrderSequential:
		for v := range x.Variants {
			for n := 1; n <= per; n++ {
				add(v, n)
			}
		}
	default:
		for n := 1; n <= per; n++ {
			for v := range x.Variants {
				add(v, n)
			}
		}
	}
	if x.Order == OrderShuffle {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
		rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
		next := make([]int, len(x.Variants))
		for i := range plan {
			v := plan[i].Variant
			next[v]++
			plan[i].Seq, plan[i].N, plan[i].Warmup = i+1, next[v], next[v] <= x.Warmup
		}
	}
	return plan
}

// PlanSeed is the seed of a shuffled plan: the manifest's, else one derived from the job's
// id, so that every node of the job, and the job requeued, shuffle alike.
func (x *Experiment) PlanSeed(jobID string) int64 {
	if x.Seed != nil {
		return *x.Seed
	}
	h := fnv.New64a()
	h.Write([]byte(jobID))
	return int64(h.Sum64() >> 1)
}

// TrialOrder is a plan as job.json keeps it: the variant of each trial, in the order the
// trials run (Seq 1 first). With the experiment, it says everything the plan does: a
// trial's N counts its variant's trials so far, the first Warmup of them warmups.
func TrialOrder(plan []Trial) []int {
	order := make([]int, len(plan))
	for i, t := range plan {
		order[i] = t.Variant
	}
	return order
}

// PlanOf is the plan that a TrialOrder stands for, checked against the experiment: every
// variant's index in range, each variant exactly Warmup+Repeat times. A job's nodes, its
// later attempts and collect read the plan rank 0 wrote this way, so that they never
// depend on a later build computing the same order.
func (x *Experiment) PlanOf(order []int) ([]Trial, error) {
	per := x.Warmup + x.Repeat
	if len(order) != len(x.Variants)*per {
		return nil, fmt.Errorf("%d trials, but the experiment has %d variants of %d trials each (%d)", len(order), len(x.Variants), per, len(x.Variants)*per)
	}
	plan := make([]Trial, len(order))
	next := make([]int, len(x.Variants))
	for i, v := range order {
		if v < 0 || v >= len(x.Variants) {
			return nil, fmt.Errorf("trial %d is of variant %d, not one of the experiment's %d", i+1, v, len(x.Variants))
		}
		if next[v]++; next[v] > per {
			return nil, fmt.Errorf("variant %d has more than its %d trials", v, per)
		}
		plan[i] = Trial{Seq: i + 1, Variant: v, N: next[v], Warmup: next[v] <= x.Warmup}
	}
	return plan, nil
}
