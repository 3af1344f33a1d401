package runner

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/benchctl/benchctl/manifest"
)

// Trial is one run of a variant's benchmarks: the unit the job channel walks.
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

// TrialPlan is the order in which a job runs the trials of an experiment: interleave (trial 1
// of every variant, then trial 2, ...), sequential (every trial of a variant, then the next
// variant) or shuffle (a random order from seed, in which each variant's warmups still come
// before its measured trials and its trial numbers still count up). Every node computes the
// same plan from the same manifest and seed.
func TrialPlan(x *manifest.Experiment, seed int64) []Trial {
	per := x.Warmup + x.Repeat
	plan := make([]Trial, 0, len(x.Variants)*per)
	add := func(v, n int) {
		plan = append(plan, Trial{Seq: len(plan) + 1, Variant: v, N: n, Warmup: n <= x.Warmup})
	}
	switch x.Order {
	case manifest.OrderSequential:
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
	if x.Order == manifest.OrderShuffle {
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

// TrialSeed is the seed of a shuffled plan: the manifest's, else one derived from the job's
// id, so that every node of the job, and the job requeued, shuffle alike.
func TrialSeed(x *manifest.Experiment, jobID string) int64 {
	if x.Seed != nil {
		return *x.Seed
	}
	h := fnv.New64a()
	h.Write([]byte(jobID))
	return int64(h.Sum64() >> 1)
}

// ExperimentError is an experiment this job cannot run (exit 4).
type ExperimentError struct{ Msg string }

func (e *ExperimentError) Error() string      { return e.Msg }
func (e *ExperimentError) InvalidInput() bool { return true }

// CheckExperimentFits refuses an experiment whose largest variant needs more nodes than
// the job has.
func CheckExperimentFits(x *manifest.Experiment, world int) error {
	if x == nil {
		return nil
	}
	for _, v := range x.Variants {
		if v.Nodes > world {
			return &ExperimentError{Msg: fmt.Sprintf("experiment: variant %s uses %d nodes but the job has %d: submit it with --nodes %d or more (benchctl submit asks for the largest variant's count by default), or remove %d from experiment.matrix.nodes", v.ID, v.Nodes, world, x.MaxNodes(), v.Nodes)}
		}
	}
	return nil
}

// ErrExperimentNotRunnable is what run and submit say of a manifest with an experiment:
// this benchctl validates an experiment and shows its plan (run --dry-run), and does not
// run its trials yet. Running it once, as if it had no experiment, would be a silent wrong
// answer.
var ErrExperimentNotRunnable = &ExperimentError{Msg: "experiment: this benchctl validates an experiment and shows its variants and trials (benchctl run --dry-run), but does not run them yet; remove experiment: from the manifest to run each benchmark once"}

// variantNode is the node as a variant of nodes nodes sees it (NNODES, WORLD_SIZE and the
// host list describe the variant's ranks 0..nodes-1); 0 is every node of the job.
func variantNode(n Node, nodes int) Node {
	if nodes == 0 || nodes >= n.World {
		return n
	}
	n.World = nodes
	if len(n.Hosts) > nodes {
		n.Hosts = n.Hosts[:nodes]
	}
	return n
}

// runsIn reports whether rank runs the variant's containers (a variant of k nodes runs on
// ranks 0..k-1).
func runsIn(v manifest.Variant, rank int) bool { return v.Nodes == 0 || rank < v.Nodes }
