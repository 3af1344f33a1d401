package compare

import (
	"fmt"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// JudgeRules is the metric rules a comparison of two jobs judges by: those of the newer
// job's manifest, else the older one's.
func JudgeRules(newRules, baseRules []manifest.MetricRule) []manifest.MetricRule {
	if len(newRules) > 0 {
		return newRules
	}
	return baseRules
}

// Check judges the collected job dir against what against names (AgainstReference,
// AgainstLast, AgainstBest or a job id), as collect --check does: the rows of both jobs'
// perf.csv, over their trials, by the jobs' metric rules (JudgeRules; opts gives the
// threshold). It returns the comparison and what it was compared with ("job 12 (reference)").
// Nothing to compare against is an *AgainstError.
func Check(l jobdir.Layout, dir jobdir.Dir, against string, opts CompareOptions) (*Comparison, string, error) {
	base, err := Against(l, dir, against)
	if err != nil {
		return nil, "", err
	}
	bs, baseRules, err := ReadJobSource(base)
	if err != nil {
		return nil, "", err
	}
	cs, rules, err := ReadJobSource(dir)
	if err != nil {
		return nil, "", err
	}
	opts.Rules = JudgeRules(rules, baseRules)
	return CompareSources(bs, cs, opts), fmt.Sprintf("job %s (%s)", jobdir.Name(base.JobID, base.Attempt), against), nil
}

// Counts is how many rows got each verdict.
func (c *Comparison) Counts() map[string]int {
	n := map[string]int{}
	for _, ch := range c.Changes {
		n[ch.Verdict]++
	}
	return n
}
