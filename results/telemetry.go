package results

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results/stats"
)

// ThrottledPercent is the share of a GPU's samples with a power, thermal or reliability
// limit active above which the node, and the result, are called throttled: a few percent
// is a transient (a boost clock settling), more is a result measured below the GPU's clocks.
const ThrottledPercent = 5.0

// maxTelemetryNodes bounds the nodes a benchmark's telemetry lists one by one in
// summary.json; the totals count them all.
const maxTelemetryNodes = 256

// Telemetry is what a run's GPUs did, over the nodes that sampled them (package runner
// writes telemetry/<run>.json on each node; collect sums them up here).
type Telemetry struct {
	// Nodes counts the nodes with telemetry of this run; NodesWithout those without (off,
	// or nothing could be sampled: Unavailable says why, from the first such node).
	Nodes        int    `json:"nodes"`
	NodesWithout int    `json:"nodesWithout,omitempty"`
	Unavailable  string `json:"unavailable,omitempty"`
	// NodesMissing counts the nodes that ran it and left no summary (killed mid-run, or a
	// benchctl from before telemetry). With NodesWithout or NodesMissing above 0 the sums
	// below cover only some of the run's nodes: perf.csv leaves its energy, power and
	// per-watt columns empty rather than print a part as the whole.
	NodesMissing int `json:"nodesMissing,omitempty"`
	// EnergyJ is the energy of every sampled GPU of every node over the run; AvgPowerW the
	// sum of the nodes' average power (the job's draw); PeakPowerW the highest node's peak
	// (a node's peak is the sum of its GPUs' peaks: a bound, the GPUs need not peak together).
	EnergyJ    *float64 `json:"energyJ,omitempty"`
	AvgPowerW  *float64 `json:"avgPowerW,omitempty"`
	PeakPowerW *float64 `json:"peakPowerW,omitempty"`
	// Throttled is true when a node had a GPU limited by power, temperature or a
	// reliability limit for more than ThrottledPercent of its samples; ThrottledNodes names
	// them (at most maxTelemetryNodes).
	Throttled      bool            `json:"throttled"`
	ThrottledNodes []NodeTelemetry `json:"throttledNodes"`
	// ThrottleKnown is whether any node's GPUs said if a limit was active (sysfs hwmon
	// cannot): without it, Throttled false means "unknown", and perf.csv's throttled is empty.
	ThrottleKnown bool `json:"throttleKnown"`
	// PerNode lists each node's figures (at most maxTelemetryNodes, by rank; none for a
	// trial's run, whose totals are enough); NodesOmitted counts the rest.
	PerNode      []NodeTelemetry `json:"perNode"`
	NodesOmitted int             `json:"nodesOmitted,omitempty"`
}

// NodeTelemetry is one node's GPUs over one run.
type NodeTelemetry struct {
	Rank       int      `json:"rank"`
	Host       string   `json:"host"`
	GPUs       int      `json:"gpus"`
	EnergyJ    *float64 `json:"energyJ,omitempty"`
	EnergyFrom string   `json:"energyFrom,omitempty"`
	AvgPowerW  *float64 `json:"avgPowerW,omitempty"`
	PeakPowerW *float64 `json:"peakPowerW,omitempty"`
	AvgGFXMHz  *float64 `json:"avgGfxMHz,omitempty"`
	MaxTempC   *float64 `json:"maxTempC,omitempty"`
	// ThrottledPercent is the highest share, over the node's GPUs, of samples with a
	// limiting reason; Reasons every reason seen on any of them.
	ThrottledPercent float64 `json:"throttledPercent"`
	Throttled        bool    `json:"throttled"`
	ThrottleKnown    bool    `json:"throttleKnown"` // a GPU said whether a limit was active
	Reasons          string  `json:"reasons,omitempty"`
	Series           string  `json:"series,omitempty"` // the node's series, relative to the job folder
}

// nodeTel is a node's telemetry as loadBench read it (nil: none).
type nodeTel struct {
	NodeTelemetry
	none string // why the node has no figures (its summary's reason)
}

// readNodeTelemetry reads a node's summary of run. A missing summary is nil (telemetry off,
// a node from before telemetry, or one killed mid-run); a damaged one is a problem.
func readNodeTelemetry(fr *safefile.Reader, dir, name string, run string) (*nodeTel, string) {
	s, err := jobdir.ReadTelemetrySummary(fr, filepath.Join(dir, jobdir.TelemetrySummaryRel(run)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ""
	case err != nil:
		return nil, relErr(err, dir, name)
	}
	// What is out of range is left out and said: the rest of the node's figures stand.
	var problem string
	if bad := s.Sanitize(); len(bad) > 0 {
		problem = relErr(fmt.Errorf("%s: %s", filepath.Join(dir, jobdir.TelemetrySummaryRel(run)), strings.Join(bad, "; ")), dir, name)
	}
	nt := &nodeTel{NodeTelemetry: NodeTelemetry{GPUs: len(s.GPUs)}}
	if len(s.GPUs) == 0 {
		nt.none = "no GPUs sampled"
		if len(s.Unavailable) > 0 {
			nt.none = s.Unavailable[0].Why
		}
		return nt, problem
	}
	var from []string
	var reasons []string
	energy, power, peak := true, true, true // every GPU has the figure: a node's sum is of all its GPUs, or none
	for _, g := range s.GPUs {
		energy, power, peak = energy && g.EnergyJ != nil, power && g.AvgPowerW != nil, peak && g.PeakPowerW != nil
		nt.EnergyJ = addOpt(nt.EnergyJ, g.EnergyJ)
		nt.AvgPowerW = addOpt(nt.AvgPowerW, g.AvgPowerW)
		nt.PeakPowerW = addOpt(nt.PeakPowerW, g.PeakPowerW)
		if g.MaxTempC != nil && (nt.MaxTempC == nil || *g.MaxTempC > *nt.MaxTempC) {
			nt.MaxTempC = g.MaxTempC
		}
		if g.ThrottleKnown > 0 {
			nt.ThrottleKnown = true
			nt.ThrottledPercent = max(nt.ThrottledPercent, 100*float64(g.Throttled)/float64(g.ThrottleKnown))
		}
		if g.EnergyFrom != "" && !slices.Contains(from, g.EnergyFrom) {
			from = append(from, g.EnergyFrom)
		}
		for _, r := range strings.Split(g.Reasons, "+") {
			if r != "" && !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
	}
	var gfx, n float64
	for _, g := range s.GPUs {
		if g.AvgGFXMHz != nil {
			gfx, n = gfx+*g.AvgGFXMHz, n+1
		}
	}
	if n > 0 {
		v := round3(gfx / n)
		nt.AvgGFXMHz = &v
	}
	if !energy {
		nt.EnergyJ, from = nil, nil
	}
	if !power {
		nt.AvgPowerW = nil
	}
	if !peak {
		nt.PeakPowerW = nil
	}
	nt.EnergyFrom = strings.Join(from, ",")
	nt.Reasons = strings.Join(reasons, "+")
	nt.ThrottledPercent = round3(nt.ThrottledPercent)
	nt.Throttled = nt.ThrottledPercent > ThrottledPercent
	nt.Series = filepath.ToSlash(filepath.Join(jobdir.NodesFolder, name, jobdir.TelemetryRel(run)))
	return nt, problem
}

func addOpt(sum, v *float64) *float64 {
	if v == nil {
		return sum
	}
	if sum == nil {
		x := *v
		return &x
	}
	x := *sum + *v
	return &x
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Complete reports whether every node that ran the run left telemetry with GPUs: the sums
// are then the run's, not a part of it.
func (t *Telemetry) Complete() bool {
	return t != nil && t.Nodes > 0 && t.NodesWithout == 0 && t.NodesMissing == 0
}

// telAgg sums a run's telemetry over its nodes.
type telAgg struct {
	t Telemetry
	// noEnergy, noPower, noPeak: a node with GPUs lacked that figure.
	noEnergy, noPower, noPeak bool
	nodes                     []NodeTelemetry // kept for PerNode (bounded)
	trial                     bool
}

func (ta *telAgg) add(rank int, host string, nt *nodeTel) {
	if nt.none != "" || nt.GPUs == 0 {
		ta.t.NodesWithout++
		if ta.t.Unavailable == "" {
			ta.t.Unavailable = nt.none
		}
		return
	}
	ta.t.Nodes++
	n := nt.NodeTelemetry
	ta.t.ThrottleKnown = ta.t.ThrottleKnown || n.ThrottleKnown
	n.Rank, n.Host = rank, host
	ta.t.EnergyJ = addOpt(ta.t.EnergyJ, n.EnergyJ)
	ta.t.AvgPowerW = addOpt(ta.t.AvgPowerW, n.AvgPowerW)
	// A node without a figure (its GPUs did not give it, or it was out of range) makes the
	// job's figure a part: it is then left empty rather than printed as the whole.
	ta.noEnergy = ta.noEnergy || n.EnergyJ == nil
	ta.noPower = ta.noPower || n.AvgPowerW == nil
	ta.noPeak = ta.noPeak || n.PeakPowerW == nil
	if n.PeakPowerW != nil && (ta.t.PeakPowerW == nil || *n.PeakPowerW > *ta.t.PeakPowerW) {
		v := *n.PeakPowerW
		ta.t.PeakPowerW = &v
	}
	if n.Throttled {
		ta.t.Throttled = true
		if len(ta.t.ThrottledNodes) < maxTelemetryNodes {
			ta.t.ThrottledNodes = append(ta.t.ThrottledNodes, n)
		}
	}
	if ta.trial {
		return
	}
	if len(ta.nodes) < maxTelemetryNodes {
		ta.nodes = append(ta.nodes, n)
	} else {
		ta.t.NodesOmitted++
	}
}

// summary is the run's Telemetry, or nil when no node left any.
func (ta *telAgg) summary() *Telemetry {
	if ta == nil || ta.t.Nodes+ta.t.NodesWithout == 0 {
		return nil
	}
	t := ta.t
	if ta.noEnergy {
		t.EnergyJ = nil
	}
	if ta.noPower {
		t.AvgPowerW = nil
	}
	if ta.noPeak {
		t.PeakPowerW = nil
	}
	t.ThrottledNodes = slices.Clone(t.ThrottledNodes)
	if t.ThrottledNodes == nil {
		t.ThrottledNodes = []NodeTelemetry{}
	}
	slices.SortFunc(t.ThrottledNodes, byRank)
	t.PerNode = slices.Clone(ta.nodes)
	if t.PerNode == nil {
		t.PerNode = []NodeTelemetry{}
	}
	slices.SortFunc(t.PerNode, byRank)
	for _, p := range []**float64{&t.EnergyJ, &t.AvgPowerW, &t.PeakPowerW} {
		if *p != nil {
			v := round3(**p)
			*p = &v
		}
	}
	return &t
}

func byRank(a, b NodeTelemetry) int {
	return cmp.Or(cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Host, b.Host))
}

// perfPerWatt is the row's performance per watt of the run's average draw, for a
// throughput (higher is better, by the manifest's metrics rules or the name), when every
// node that ran it has telemetry; else nil.
func perfPerWatt(t *Telemetry, row RowSummary, rules []manifest.MetricRule) *float64 {
	if !t.Complete() {
		return nil
	}
	return perWatt(row.Value, row.Metric, t.AvgPowerW, rules)
}

// perWatt is value per watt for a throughput metric, else nil.
func perWatt(value *float64, metric string, watts *float64, rules []manifest.MetricRule) *float64 {
	if watts == nil || *watts <= 0 || value == nil {
		return nil
	}
	d := AutoDirection
	if r := manifest.RuleFor(rules, metric); r != nil && r.Better != "" {
		d = HigherIsBetter
		if r.Better == manifest.BetterLower {
			d = LowerIsBetter
		}
	}
	if Direction(d, metric) != HigherIsBetter {
		return nil
	}
	v := *value / *watts
	return &v
}

// metricRules is job.json's metric rules (none without job.json).
func (a *aggregator) metricRules() []manifest.MetricRule {
	if a.job == nil {
		return nil
	}
	return MetricRules(a.job.Manifest.Metrics)
}

// TrialTelemetry is a variant's row's telemetry over its measured trials.
type TrialTelemetry struct {
	Trials int `json:"trials"` // measured trials with telemetry
	// EnergyJ and AvgPowerW are the medians over those trials (a trial's figure is its
	// run's: every node's GPUs); PerfPerWatt is the row's median performance per median
	// watt, for a throughput.
	EnergyJ     *float64 `json:"energyJ,omitempty"`
	AvgPowerW   *float64 `json:"avgPowerW,omitempty"`
	PerfPerWatt *float64 `json:"perfPerWatt,omitempty"`
	// Throttled is true when any measured trial was; ThrottledTrials lists them
	// (BENCHCTL_TRIAL numbers).
	Throttled       bool  `json:"throttled"`
	ThrottledTrials []int `json:"throttledTrials"`
}

func trialTelemetry(er *ExperimentRow, rules []manifest.MetricRule) *TrialTelemetry {
	var tt TrialTelemetry
	var energy, power []float64
	for _, t := range er.Trials {
		if t.Warmup || (t.EnergyJ == nil && t.AvgPowerW == nil) {
			continue
		}
		tt.Trials++
		if t.EnergyJ != nil {
			energy = append(energy, *t.EnergyJ)
		}
		if t.AvgPowerW != nil {
			power = append(power, *t.AvgPowerW)
		}
		if t.Throttled {
			tt.Throttled = true
			tt.ThrottledTrials = append(tt.ThrottledTrials, t.VariantTrial)
		}
	}
	if tt.Trials == 0 {
		return nil
	}
	if tt.ThrottledTrials == nil {
		tt.ThrottledTrials = []int{}
	}
	tt.EnergyJ, tt.AvgPowerW = medianOf(energy), medianOf(power)
	if er.Stats.Trials > 0 {
		med := er.Stats.Median
		tt.PerfPerWatt = perWatt(&med, er.Metric, tt.AvgPowerW, rules)
	}
	return &tt
}

func medianOf(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := round3(stats.MedianOfSorted(s))
	return &m
}

// ThrottleNote is the table's note for a throttled run: which nodes, by what, how much.
func ThrottleNote(t *Telemetry) string {
	if t == nil || !t.Throttled {
		return ""
	}
	var parts []string
	for i, n := range t.ThrottledNodes {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(t.ThrottledNodes)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s %s%%)", jobdir.NodeName(n.Rank, n.Host), CmpOr(limitingReasons(n.Reasons), "limited"), stats.FormatStat(n.ThrottledPercent)))
	}
	return "throttled: " + strings.Join(parts, ", ")
}

// trialThrottleNote is the experiment table's note for a row with throttled trials.
func trialThrottleNote(t *TrialTelemetry) string {
	if t == nil || !t.Throttled {
		return ""
	}
	parts := make([]string, len(t.ThrottledTrials))
	for i, n := range t.ThrottledTrials {
		parts[i] = strconv.Itoa(n)
	}
	return "throttled in trial " + strings.Join(parts, ", ")
}

// limitingReasons leaves out the reasons that do not count as throttling ("other").
func limitingReasons(r string) string {
	var out []string
	for _, w := range strings.Split(r, "+") {
		if w != "" && w != "other" {
			out = append(out, w)
		}
	}
	return strings.Join(out, "+")
}

// withNote joins a row's reason and a further note.
func withNote(reason, note string) string {
	switch {
	case note == "":
		return reason
	case reason == "":
		return note
	}
	return reason + "; " + note
}
