package results

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
)

// NodeRecords is summary.json's nodeRecords: how the node records (node.json) of the job's
// nodes compare. Differs lists every compared field (jobdir.NodeRecord.Fields) on which the
// nodes with a record do not all agree; Without the nodes that have no readable record.
type NodeRecords struct {
	Nodes        int             `json:"nodes"` // nodes with a readable node.json
	Differs      []FieldDiff     `json:"differs"`
	Without      []RecordMissing `json:"without"`                // at most maxListedRecords, lowest ranks first
	WithoutCount int             `json:"withoutCount"`           // all of them
	FieldsCapped int             `json:"fieldsCapped,omitempty"` // fields not compared: more than maxRecordFields
}

// RecordMissing is a node without a readable node.json, and why.
type RecordMissing struct {
	Rank int    `json:"rank"`
	Host string `json:"host"`
	Why  string `json:"why"`
}

// FieldDiff is one field the nodes disagree on: each value with the nodes that have it,
// the most common first. A node whose record lacks the field has the value "(absent)".
type FieldDiff struct {
	Field      string       `json:"field"`
	Values     []FieldValue `json:"values"`
	MoreValues int          `json:"moreValues,omitempty"` // values beyond maxFieldValues, not listed
}

// FieldValue is a value of a field and the nodes that have it: how many, and their ranks
// as ranges ("0-2,5", at most maxRankRanges ranges, then "and N more"); Host is the node's
// host when only one node has the value.
type FieldValue struct {
	Value string `json:"value"`
	Nodes int    `json:"nodes"`
	Ranks string `json:"ranks"`
	Host  string `json:"host,omitempty"`
}

// Bounds of the comparison, so that 10,000 nodes (or one hostile node.json) cost little.
const (
	maxRecordFields  = 2000 // distinct field names compared
	maxFieldValues   = 8    // distinct values listed per field (all are counted)
	maxTrackedValues = 64   // distinct values per field whose ranks are kept
	maxRankRanges    = 8    // ranges of ranks written per value
	maxListedRecords = 100  // nodes without a record listed by name
	maxValueText     = 120  // a value in a note
	maxRecordText    = 256  // a field name or value kept (bytes); longer ones are cut
	maxNoteFields    = 20   // fields the table's notes name
	absentValue      = "(absent)"
	otherValues      = "(other values)"
)

// recordAgg compares the node records as nodes are streamed: per field, per value, the
// ranks that have it.
type recordAgg struct {
	fields   map[string]*fieldAgg
	order    []string
	capped   map[string]bool // field names beyond maxRecordFields (bounded by the cap, counted)
	ranks    []int32         // ranks with a record
	without  []RecordMissing // the lowest ranks, at most 2*maxListedRecords
	nWithout int
	machines map[int]recordMachine // by rank, for perf.csv's machine columns
}

type fieldAgg struct {
	values map[string][]int32
	order  []string
	other  []int32 // ranks of values beyond maxTrackedValues
	nOther int     // distinct such values
}

// recordMachine is what perf.csv's machine columns take from a node's record.
type recordMachine struct{ hostname, arch string }

// add merges one node's record (or its absence).
func (ra *recordAgg) add(nd *nodeData) {
	if nd.nodeRec == nil {
		why := "no node.json"
		if nd.recordErr != nil && !errors.Is(nd.recordErr, fs.ErrNotExist) {
			why = nd.recordErr.Error()
		}
		ra.nWithout++
		ra.without = append(ra.without, RecordMissing{Rank: nd.rank, Host: nd.host, Why: why})
		if len(ra.without) == 2*maxListedRecords {
			sortMissing(ra.without)
			ra.without = ra.without[:maxListedRecords]
		}
		return
	}
	if ra.fields == nil {
		ra.fields, ra.capped, ra.machines = map[string]*fieldAgg{}, map[string]bool{}, map[int]recordMachine{}
	}
	ra.ranks = append(ra.ranks, int32(nd.rank))
	m := recordMachine{hostname: nd.nodeRec.Machine.Hostname}
	if len(nd.nodeRec.GPU.Devices) > 0 {
		m.arch = nd.nodeRec.GPU.Devices[0].Arch
	}
	ra.machines[nd.rank] = m
	seen := map[string]bool{}
	for _, f := range nd.nodeRec.Fields() {
		f.Name, f.Value = recordText(f.Name), recordText(f.Value)
		if seen[f.Name] {
			continue // a hostile record naming a device twice
		}
		seen[f.Name] = true
		fa := ra.fields[f.Name]
		if fa == nil {
			if len(ra.order) >= maxRecordFields {
				if len(ra.capped) < maxRecordFields {
					ra.capped[f.Name] = true
				}
				continue
			}
			fa = &fieldAgg{values: map[string][]int32{}}
			ra.fields[f.Name] = fa
			ra.order = append(ra.order, f.Name)
		}
		fa.add(f.Value, int32(nd.rank))
	}
}

// recordText is a field name or value as collect keeps it: one line of at most
// maxRecordText bytes (a node wrote it; 10,000 nodes of 1 MiB values must not be kept).
func recordText(s string) string {
	if len(s) > 4*maxRecordText {
		s = strings.ToValidUTF8(s[:4*maxRecordText], "")
	}
	return shorten(s, maxRecordText)
}

func (fa *fieldAgg) add(value string, rank int32) {
	if rs, ok := fa.values[value]; ok {
		fa.values[value] = append(rs, rank)
		return
	}
	if len(fa.order) >= maxTrackedValues {
		fa.other = append(fa.other, rank)
		fa.nOther++
		return
	}
	fa.order = append(fa.order, value)
	fa.values[value] = []int32{rank}
}

// finish is the comparison: every field whose values differ, in the records' field order.
func (ra *recordAgg) finish(hostOf func(int) string) NodeRecords {
	out := NodeRecords{Nodes: len(ra.ranks), Differs: []FieldDiff{}, Without: []RecordMissing{}, FieldsCapped: len(ra.capped), WithoutCount: ra.nWithout}
	slices.Sort(ra.ranks)
	for _, name := range ra.order {
		fa := ra.fields[name]
		type group struct {
			value string
			ranks []int32
		}
		var groups []group
		n := 0
		for _, v := range fa.order {
			groups = append(groups, group{v, fa.values[v]})
			n += len(fa.values[v])
		}
		if len(fa.other) > 0 {
			groups = append(groups, group{fmt.Sprintf("%s (%d more)", otherValues, fa.nOther), fa.other})
			n += len(fa.other)
		}
		if n < len(ra.ranks) {
			groups = append(groups, group{absentValue, absentRanks(ra.ranks, fa)})
		}
		if len(groups) < 2 {
			continue
		}
		slices.SortStableFunc(groups, func(x, y group) int { return cmp.Compare(len(y.ranks), len(x.ranks)) })
		d := FieldDiff{Field: name}
		for i, g := range groups {
			if i == maxFieldValues {
				d.MoreValues = len(groups) - maxFieldValues
				break
			}
			slices.Sort(g.ranks)
			fv := FieldValue{Value: g.value, Nodes: len(g.ranks), Ranks: jobdir.RankRanges(g.ranks, maxRankRanges)}
			if len(g.ranks) == 1 {
				fv.Host = hostOf(int(g.ranks[0]))
			}
			d.Values = append(d.Values, fv)
		}
		out.Differs = append(out.Differs, d)
	}
	sortMissing(ra.without)
	out.Without = append(out.Without, ra.without[:min(len(ra.without), maxListedRecords)]...)
	return out
}

func sortMissing(m []RecordMissing) {
	slices.SortFunc(m, func(x, y RecordMissing) int { return cmp.Compare(x.Rank, y.Rank) })
}

// absentRanks are the ranks with a record that lack the field (ranks is sorted).
func absentRanks(ranks []int32, fa *fieldAgg) []int32 {
	has := make(map[int32]bool, len(ranks))
	for _, rs := range fa.values {
		for _, r := range rs {
			has[r] = true
		}
	}
	for _, r := range fa.other {
		has[r] = true
	}
	var out []int32
	for _, r := range ranks {
		if !has[r] {
			out = append(out, r)
		}
	}
	return out
}

// RecordNotes are the table's notes on the node records: one line per field that differs
// ("node record differs: kernel: ranks 0-1: 6.1.0 …; rank 2 (n3): 5.15.0 …"), and one for
// nodes without a record when others have one.
func RecordNotes(r NodeRecords) []string {
	var out []string
	for i, d := range r.Differs {
		if i == maxNoteFields {
			out = append(out, fmt.Sprintf("node records: %d more fields differ (summary.json's nodeRecords, report.html)", len(r.Differs)-maxNoteFields))
			break
		}
		parts := make([]string, 0, len(d.Values)+1)
		for _, v := range d.Values {
			who := "ranks " + v.Ranks
			if v.Nodes == 1 {
				who = "rank " + v.Ranks
				if v.Host != "" {
					who += " (" + v.Host + ")"
				}
			}
			parts = append(parts, who+": "+shorten(v.Value, maxValueText))
		}
		if d.MoreValues > 0 {
			parts = append(parts, fmt.Sprintf("%d more values", d.MoreValues))
		}
		out = append(out, "node record differs: "+d.Field+": "+strings.Join(parts, "; "))
	}
	if r.WithoutCount > 0 && r.Nodes > 0 { // no record at all: a job of a benchctl before node.json
		var names []string
		for i, w := range r.Without {
			if i == maxListedNodes {
				names = append(names, fmt.Sprintf("and %d more", r.WithoutCount-maxListedNodes))
				break
			}
			names = append(names, jobdir.NodeName(w.Rank, w.Host))
		}
		out = append(out, fmt.Sprintf("no node record (node.json) from %s: %s", Plural(r.WithoutCount, "node", "nodes"), strings.Join(names, ", ")))
	}
	if r.FieldsCapped > 0 {
		out = append(out, fmt.Sprintf("node records: %d more fields than the %d compared were not compared", r.FieldsCapped, maxRecordFields))
	}
	return out
}
