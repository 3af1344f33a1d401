package manifest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func plannedExperiment(variants, repeat, warmup int, order string) *Experiment {
	x := &Experiment{Repeat: repeat, Warmup: warmup, Order: order}
	for i := range variants {
		x.Variants = append(x.Variants, Variant{ID: fmt.Sprintf("v=%d", i)})
	}
	return x
}

// planText writes a plan as "variant.trial" with a w for warmups: "0.1w 1.1w 0.2 ...".
func planText(plan []Trial) string {
	var parts []string
	for i, t := range plan {
		if t.Seq != i+1 {
			return fmt.Sprintf("seq %d at %d", t.Seq, i)
		}
		w := ""
		if t.Warmup {
			w = "w"
		}
		parts = append(parts, fmt.Sprintf("%d.%d%s", t.Variant, t.N, w))
	}
	return strings.Join(parts, " ")
}

func TestTrialPlanOrders(t *testing.T) {
	cases := []struct {
		order string
		want  string
	}{
		{OrderInterleave, "0.1w 1.1w 0.2 1.2 0.3 1.3"},
		{"", "0.1w 1.1w 0.2 1.2 0.3 1.3"},
		{OrderSequential, "0.1w 0.2 0.3 1.1w 1.2 1.3"},
	}
	for _, c := range cases {
		x := plannedExperiment(2, 2, 1, c.order)
		if got := planText(x.Plan(0)); got != c.want {
			t.Errorf("%q: %s, want %s", c.order, got, c.want)
		}
	}
}

// A shuffled plan is a permutation of the trials, the same for the same seed on every node,
// another for another seed; in it each variant's warmups come first and its trial numbers
// count up.
func TestTrialPlanShuffle(t *testing.T) {
	x := plannedExperiment(5, 4, 2, OrderShuffle)
	a, b := x.Plan(42), x.Plan(42)
	if !slices.Equal(a, b) {
		t.Fatalf("the same seed gave two plans:\n%s\n%s", planText(a), planText(b))
	}
	if planText(x.Plan(43)) == planText(a) {
		t.Errorf("seeds 42 and 43 gave the same plan")
	}
	if planText(a) == planText(plannedExperiment(5, 4, 2, OrderInterleave).Plan(0)) {
		t.Errorf("the shuffle left the interleaved order")
	}
	if len(a) != 30 {
		t.Fatalf("%d trials, want 30", len(a))
	}
	next := map[int]int{}
	for _, tr := range a {
		next[tr.Variant]++
		if tr.N != next[tr.Variant] || tr.Warmup != (tr.N <= 2) {
			t.Errorf("trial %+v: want number %d", tr, next[tr.Variant])
		}
	}
	for v := range 5 {
		if next[v] != 6 {
			t.Errorf("variant %d ran %d trials, want 6", v, next[v])
		}
	}
}

func TestTrialSeed(t *testing.T) {
	x := plannedExperiment(1, 1, 0, OrderShuffle)
	a, b := x.PlanSeed("123"), x.PlanSeed("123")
	if a != b || a == x.PlanSeed("124") || a < 0 {
		t.Errorf("seeds from job ids: %d %d", x.PlanSeed("123"), x.PlanSeed("124"))
	}
	s := int64(-7)
	x.Seed = &s
	if x.PlanSeed("123") != -7 {
		t.Errorf("the manifest's seed is not used")
	}
}

// Every order's plan comes back from its TrialOrder unchanged, and an order that does not
// fit the experiment (too short, too long, a variant out of range or over its trials) is
// an error saying which.
func TestPlanOfTrialOrder(t *testing.T) {
	seed := int64(7)
	for _, order := range []string{OrderInterleave, OrderSequential, OrderShuffle} {
		x := &Experiment{Repeat: 3, Warmup: 2, Order: order, Seed: &seed, Variants: make([]Variant, 4)}
		plan := x.Plan(seed)
		back, err := x.PlanOf(TrialOrder(plan))
		if err != nil || !reflect.DeepEqual(back, plan) {
			t.Errorf("%s: %v\n%+v\n%+v", order, err, back, plan)
		}
	}
	x := &Experiment{Repeat: 1, Warmup: 1, Variants: make([]Variant, 2)}
	for _, c := range []struct {
		order []int
		want  string
	}{
		{nil, "0 trials, but the experiment has 2 variants of 2 trials each (4)"},
		{[]int{0, 1, 0, 1, 0}, "5 trials"},
		{[]int{0, 1, 2, 1}, "trial 3 is of variant 2, not one of the experiment's 2"},
		{[]int{0, -1, 0, 1}, "trial 2 is of variant -1"},
		{[]int{0, 0, 0, 1}, "variant 0 has more than its 2 trials"},
		{make([]int, 1<<20), "1048576 trials"},
	} {
		if _, err := x.PlanOf(c.order); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.order, err, c.want)
		}
	}
}
