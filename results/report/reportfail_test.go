package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/results"
)

// 40 of 200 nodes failed the same way: the report says so in a few lines, names at most
// maxFailNamed nodes outside a <details> that holds the rest, and shows one diagnostics
// excerpt instead of forty.
func TestReportFailureListIsCompact(t *testing.T) {
	shared := t.TempDir()
	if _, err := synth.WriteJob(shared, synth.Options{JobID: "2001", Nodes: 200, Rows: 2, FailEvery: 5, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	col, err := collectJob(t, shared, "2001", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(col.Summary.Benchmarks[0].Failed); n != 40 {
		t.Fatalf("%d failed nodes, want 40", n)
	}
	html := render(t, col.Summary)
	bench := between(t, html, "<h3>Failed nodes (40)</h3>", "<h3>Candidates</h3>")
	job := between(t, html, `<section class="bench" id="nodes">`, "</section>")
	for name, part := range map[string]string{"benchmark": bench, "job": job} {
		outside := regexp.MustCompile(`(?s)<details class="all-failed">.*?</details>`).ReplaceAllString(part, "")
		if n := strings.Count(outside, `data-node="`); n == 0 || n > maxFailNamed {
			t.Errorf("%s: %d nodes named outside the <details>, want 1 to %d", name, n, maxFailNamed)
		}
		if strings.Contains(part, `class="failed-node"`) {
			t.Errorf("%s: a block per failed node", name)
		}
		if !strings.Contains(part, `<span class="count">40 nodes</span>`) || !strings.Contains(part, "and 30 more") {
			t.Errorf("%s: no count by reason:\n%s", name, outside)
		}
		for r := 4; r < 200; r += 5 {
			if !strings.Contains(part, fmt.Sprintf(`data-node="%d-%s"`, r, synth.Host(r))) {
				t.Errorf("%s: node %d is not listed", name, r)
			}
		}
	}
	if n := strings.Count(bench, `<pre class="excerpt">`); n != 1 {
		t.Errorf("%d diagnostics excerpts, want one for the one reason", n)
	}
	if len(bench) > 12<<10 || len(job) > 12<<10 {
		t.Errorf("failed nodes take %d and %d bytes of the report", len(bench), len(job))
	}
	if r := col.Summary.Benchmarks[0].Reason; !strings.Contains(html, `<p class="reason">40 of 200 nodes failed</p>`) || strings.Contains(html, r) {
		t.Errorf("the benchmark's reason is not shortened (it is %q)", r)
	}
}

// Many reasons: the largest first, the rest as one group, names shared out among them.
func TestFailListGroupsByReason(t *testing.T) {
	var failed []results.NodeFailure
	add := func(n int, outcome string, exit int, reason func(int) string) {
		for range n {
			r := len(failed)
			failed = append(failed, results.NodeFailure{Rank: r, Host: fmt.Sprintf("h%d", r), Dir: fmt.Sprintf("nodes/%d-h%d", r, r), Outcome: outcome, ExitCode: exit, Reason: reason(r)})
		}
	}
	add(3, "failure", 1, func(int) string { return "failure (exit 1): out of memory" })
	add(12, "timeout", 124, func(int) string { return "timeout (exit 124)" })
	add(4, "missing", 0, func(r int) string { return fmt.Sprintf("no status: node never reported (no folder nodes/%d-*)", r) })
	for i := range 5 {
		add(1, "failure", 2+i, func(int) string { return fmt.Sprintf("failure (exit %d): something else", 2+i) })
	}
	fl := newFailList(failed, "")
	if fl.Nodes != 24 || len(fl.Detailed) != 0 || len(fl.All) != 24 {
		t.Fatalf("nodes %d, detailed %d, all %d", fl.Nodes, len(fl.Detailed), len(fl.All))
	}
	var got []string
	named, nodes := 0, 0
	for _, g := range fl.Groups {
		got = append(got, fmt.Sprintf("%d %s %v", g.Nodes, g.Reason, g.Similar))
		named += len(g.Named)
		nodes += len(g.Named) + g.Unnamed
		if len(g.Named) == 0 {
			t.Errorf("group %q names no node", g.Reason)
		}
	}
	want := []string{
		"12 timeout (exit 124) false",
		"4 no status: node never reported (no folder nodes/15-*) true", // differs in numbers only
		"3 failure (exit 1): out of memory false",
		"1 failure (exit 2): something else false",
		"4 4 other reasons false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if named > maxFailNamed || nodes != 24 {
		t.Errorf("%d named (at most %d), %d nodes accounted for (24)", named, maxFailNamed, nodes)
	}
	if few := newFailList(failed[:maxFailDetailed], ""); len(few.Detailed) != maxFailDetailed || len(few.Groups) != 0 {
		t.Errorf("%d failures: %d detailed, %d groups", maxFailDetailed, len(few.Detailed), len(few.Groups))
	}
}

// between is the part of s from the first from to the next to.
func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q", from)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("no %q after %q", to, from)
	}
	return s[i : i+j]
}
