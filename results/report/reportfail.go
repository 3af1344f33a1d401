package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/results"
)

// redactQuoted hides credentials in text the report quotes from the job folder (a failed
// node's reason, its diagnostics excerpt). collect runs on the login node and does not know
// the job's secret values (the node redacted those it knew when it wrote them); it hides
// whatever is named like a credential: NAME=value, --name value, "Bearer value", a URL's
// password (manifest.TextRedactor).
func redactQuoted(s string) string { return (*manifest.TextRedactor)(nil).Redact(s) }

// How the report lists failed nodes. A few are shown each in full, with the first lines of
// their diagnostics. More are a compact list: the reasons with how many nodes each, at most
// maxFailNamed nodes named (and one diagnostics excerpt per reason, folded), and every node
// behind a <details>, so that 40 failures of the same timeout read as one line, not 40.
const (
	maxFailDetailed = 3  // failures shown each in full; more make the compact list
	maxFailGroups   = 5  // reasons listed; the others are counted as one group
	maxFailNamed    = 10 // nodes named in the compact list, outside the <details>
)

// failList is the failed nodes of a benchmark, or of the job, as the report shows them.
type failList struct {
	Nodes    int        // nodes the failures stand for (a run of missing nodes is one entry)
	Detailed []failView // each in full, when there are few
	Groups   []failGroup
	All      []failLink // every failure up to maxFailedListed, in the <details>
	More     int        // nodes left out of All
}

// failGroup is the failures that share a reason.
type failGroup struct {
	Reason  string // the first node's
	Similar bool   // the others' reasons differ from it, in numbers only
	Nodes   int
	Named   []failLink
	Unnamed int       // nodes of the group not named
	Example *failView // the first one, with its diagnostics excerpt (nil without one)
}

// failLink is a failed node, named and linked to its log, diagnostics or status.
type failLink struct {
	Label, Href, Reason string
	Nodes               int
}

func linkOf(f results.NodeFailure) failLink {
	l := failLink{Label: f.Label(), Reason: f.Reason, Nodes: f.Nodes()}
	switch {
	case f.Log != "":
		l.Href = f.Log
	case f.Diagnostics != "":
		l.Href = f.Diagnostics + "/summary.txt"
	case f.Dir != "":
		l.Href = f.Dir + "/status.json"
	}
	return l
}

// newFailList makes the list; jobPath is the job folder the excerpts are read from ("":
// none, as for a decoded summary.json).
func newFailList(failed []results.NodeFailure, jobPath string) failList {
	fl := failList{Nodes: results.CountNodes(failed)}
	example := func(f results.NodeFailure) failView {
		fv := failView{NodeFailure: f}
		if f.Diagnostics != "" && jobPath != "" {
			fv.Excerpt, fv.Truncated = excerpt(filepath.Join(jobPath, filepath.FromSlash(f.Diagnostics), jobdir.DiagSummaryFile))
		}
		return fv
	}
	if len(failed) <= maxFailDetailed {
		for _, f := range failed {
			fl.Detailed = append(fl.Detailed, example(f))
		}
		return fl
	}
	listed := failed[:min(len(failed), maxFailedListed)]
	for _, f := range listed {
		fl.All = append(fl.All, linkOf(f))
	}
	fl.More = results.CountNodes(failed[len(listed):])

	// Group by reason, the largest groups first (then by their first node); beyond
	// maxFailGroups, the smallest are one group: "3 other reasons".
	byReason := map[string]int{}
	var groups []failGroup
	var entries []int // failures (not nodes) per group
	for _, f := range failed {
		k := reasonKey(f)
		g, ok := byReason[k]
		if !ok {
			g = len(groups)
			byReason[k] = g
			groups = append(groups, failGroup{Reason: f.Reason})
			entries = append(entries, 0)
		}
		groups[g].Nodes += f.Nodes()
		groups[g].Similar = groups[g].Similar || f.Reason != groups[g].Reason
		entries[g]++
	}
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(groups[y].Nodes, groups[x].Nodes) })
	shown := len(order)
	if shown > maxFailGroups {
		shown = maxFailGroups - 1
	}
	as := make([]int, len(groups)) // group -> its place in fl.Groups
	fl.Groups = make([]failGroup, min(len(order), maxFailGroups))
	quota := make([]int, len(fl.Groups))
	for i, g := range order {
		at := min(i, shown)
		as[g] = at
		if i < shown {
			fl.Groups[at] = groups[g]
		} else {
			fl.Groups[at].Reason = fmt.Sprintf("%d other reasons", len(order)-shown)
			fl.Groups[at].Nodes += groups[g].Nodes
		}
		quota[at] += entries[g]
	}
	// maxFailNamed names shared out in order: each group at least one while they last.
	budget := maxFailNamed
	for i := range quota {
		quota[i] = min(quota[i], max(1, budget/(len(quota)-i)), budget)
		budget -= quota[i]
	}
	for _, f := range failed {
		at := as[byReason[reasonKey(f)]]
		g := &fl.Groups[at]
		if len(g.Named) == quota[at] {
			g.Unnamed += f.Nodes()
			continue
		}
		g.Named = append(g.Named, linkOf(f))
		if g.Example == nil && f.Diagnostics != "" {
			if ex := example(f); ex.Excerpt != "" {
				g.Example = &ex
			}
		}
	}
	return fl
}

// reasonKey groups failures whose reasons differ only in numbers ("no folder nodes/98-*"
// and "no folder nodes/198-*", "node00059" and "node00119"), with the same outcome and exit.
func reasonKey(f results.NodeFailure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%d\x00", f.Outcome, f.ExitCode)
	digits := false
	for _, c := range f.Reason {
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(c)
	}
	return b.String()
}

// briefReason is a benchmark's reason without the failed nodes it lists ("40 of 200 nodes
// failed: 4-n4 (timeout ...); ..." -> "40 of 200 nodes failed"), when the report lists them
// below; any other reason as it is.
func briefReason(b *results.BenchmarkSummary, world int) string {
	n := results.CountNodes(b.Failed)
	if n == 0 {
		return b.Reason
	}
	head := fmt.Sprintf("%d of %d nodes failed", n, world)
	if i := strings.Index(b.Reason, head+": "); i >= 0 {
		return b.Reason[:i+len(head)]
	}
	return b.Reason
}
