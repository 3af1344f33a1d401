package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// collected is what the report's tests need of a collected job: its summary.
type collected struct{ Summary *results.Summary }

// collectJob aggregates a job of shared as collect does (the newest attempt unless one is asked
// for), for the report's tests.
func collectJob(t *testing.T, shared, job string, attempt int, partial bool) (*collected, error) {
	t.Helper()
	dir, err := jobdir.Layout{Shared: shared}.Find(job, attempt)
	if err != nil {
		return nil, err
	}
	s, err := results.Aggregate(context.Background(), dir, results.AggregateOptions{Now: resultstest.FixedNow, CollectedBy: "test", Workers: 3, Partial: partial})
	if err != nil {
		return nil, err
	}
	return &collected{Summary: s}, nil
}

func render(t *testing.T, s *results.Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteReport(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestReportFailedJob(t *testing.T) {
	col, err := collectJob(t, resultstest.SharedCopy(t), "300", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	html := render(t, col.Summary)
	for _, want := range []string{
		`data-node="1-f2"`, "timeout (exit 124)", "benchmark train on 1-f2: timeout after 10m0s",
		"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; other markup", // the excerpt is escaped
		`href="nodes/1-f2/train.log"`, `href="nodes/1-f2/diagnostics/train/summary.txt"`,
		"line 40\n…</pre>", // the first 40 lines only
		`class="badge FAILURE"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://", "line 41\n", `href="nodes/0-f1/train.log"`} {
		if strings.Contains(html, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
}

func TestReportCharts(t *testing.T) {
	col, err := collectJob(t, resultstest.SharedCopy(t), "100", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	html := render(t, col.Summary)
	if n := strings.Count(html, `<svg class="nodes"`); n != 2 {
		t.Errorf("%d node strips, want one per benchmark", n)
	}
	if n := strings.Count(html, `<svg class="values"`); n != 4 {
		t.Errorf("%d value charts, want one per row with values (4)", n)
	}
	for _, want := range []string{`<rect class="bar win"`, ">1-n2</text>", `class="median"`, "spread over 3 nodes", `href="nodes/1-n2/results/train/train.csv"`} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// Many nodes: a histogram and a stacked bar instead of one mark per node.
func TestReportManyNodes(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "11", 600)
	for r := range 600 {
		resultstest.WriteNode(t, job, r, jobdir.OutcomeSuccess, fmt.Sprintf("model,performance,metric\nm,%d,x\n", 1000+r%37))
	}
	s := resultstest.Aggregate(t, job)
	html := render(t, s)
	if !strings.Contains(html, "600 nodes in 30 bins") || strings.Count(html, "<rect") > 100 {
		t.Fatalf("no histogram, or too many marks (%d rects)", strings.Count(html, "<rect"))
	}
	// Under the histogram, the slowest nodes by name: the value 1000 at ranks 0, 37, 74, ...
	if !strings.Contains(html, `<p class="slowest">slowest: <span class="n" data-slow="0-h0">0-h0 (`+"\u2212"+`1.8`+"\u202f"+`% vs median)</span>, <span class="n" data-slow="37-h37">`) ||
		strings.Count(html, "data-slow=") != maxSlowest {
		t.Errorf("no line naming the %d slowest nodes under the histogram", maxSlowest)
	}
}

// Values at the ends of float64's range: the histogram's span overflows if computed naively.
func TestReportHistogramExtremeValues(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "12", 70)
	for r := range 70 {
		v := "1"
		switch r {
		case 0:
			v = "-1.7e308"
		case 1:
			v = "1.7e308"
		}
		resultstest.WriteNode(t, job, r, jobdir.OutcomeSuccess, "model,performance,metric\nm,"+v+",x\n")
	}
	s := resultstest.Aggregate(t, job)
	html := render(t, s)
	if !strings.Contains(html, "70 nodes in 30 bins") {
		t.Fatal("no histogram")
	}
	if strings.Contains(html, "NaN") {
		t.Error("report shows NaN")
	}
}

func TestSpanFraction(t *testing.T) {
	for _, c := range []struct{ v, lo, half, want float64 }{
		{5, 0, 5, 0.5}, {0, 0, 5, 0}, {10, 0, 5, 1}, {11, 0, 5, 1}, {-1, 0, 5, 0},
		{1, 1, 0, 0}, {1.7e308, -1.7e308, 1.7e308, 1}, {0, -1.7e308, 1.7e308, 0.5},
	} {
		if got := spanFraction(c.v, c.lo, c.half); got != c.want {
			t.Errorf("spanFraction(%g, %g, %g) = %g, want %g", c.v, c.lo, c.half, got, c.want)
		}
	}
}

// The headline: the winning value rounded, its node, and the median beside it; the tables
// keep every value as its CSV wrote it.
func TestReportHeadlineAndTables(t *testing.T) {
	col, err := collectJob(t, resultstest.SharedCopy(t), "100", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	html := render(t, col.Summary)
	const sp = "\u202f"
	for _, want := range []string{
		`<span class="value" title="14164">14` + sp + `164</span> <span class="metric">samples_per_second (winner 0-n1)</span> <span class="median">· median 14` + sp + `000</span>`,
		`<span class="value" title="100.5">100.5</span> <span class="metric">samples_per_second (train_0, winner 1-n2)</span> <span class="median">· median 99.25</span>`,
		"min 13" + sp + "500 (2-n3) · median 14" + sp + "000 · max 14" + sp + "164 (0-n1)",
		`<td class="num">007</td>`, `<td class="num">200.25</td>`, `<td class="num">14164</td>`, `<td class="num">14000.5</td>`, // as written
		"axis starts at 13" + sp + "000, not at zero",
		`<p class="slowest">slowest: <span class="n" data-slow="2-n3">2-n3 (` + "\u2212" + "3.6" + sp + "% vs median)</span></p>",
		`<rect class="bar slow"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// The header names the GPU model and architecture the nodes reported (summary.json has
// both), or says that they did not.
func TestReportGPU(t *testing.T) {
	job := resultstest.WriteJob(t, t.TempDir(), "31", 2)
	for r := range 2 {
		resultstest.WriteNode(t, job, r, jobdir.OutcomeSuccess, "model,performance,metric\nm,100,x\n")
		p := resultstest.NodeOf(job, r).Status()
		var st jobdir.Status
		data, _ := os.ReadFile(p)
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		st.GPUCount, st.GPUArch, st.GPUName = 8, "gfx942", "AMD Instinct MI300X"
		data, _ = json.Marshal(st)
		os.WriteFile(p, data, 0o644)
	}
	s := resultstest.Aggregate(t, job)
	if s.GPUName != "AMD Instinct MI300X" || s.GPUArch != "gfx942" {
		t.Errorf("summary GPU %q (%q)", s.GPUName, s.GPUArch)
	}
	if html := render(t, s); !strings.Contains(html, `<p class="meta gpu">GPU <strong>AMD Instinct MI300X (gfx942)</strong></p>`) {
		t.Error("the header does not name the GPU")
	}
	if data, _ := results.EncodeSummary(s); !strings.Contains(string(data), `"gpuName": "AMD Instinct MI300X"`) {
		t.Errorf("summary.json lacks gpuName:\n%s", data)
	}
	s.GPUName, s.GPUArch = "", ""
	if html := render(t, s); !strings.Contains(html, "GPU model not recorded by the nodes") {
		t.Error("the header does not say that the GPU is unknown")
	}
}

// One file that needs nothing else: no scripts, styles, fonts or images from anywhere, no
// URL at all, and every link relative to the job folder.
func TestReportIsSelfContained(t *testing.T) {
	shared := resultstest.SharedCopy(t)
	if _, err := synth.WriteJob(shared, synth.Options{JobID: "2002", Nodes: 200, Rows: 2, FailEvery: 5, MissingEvery: 50, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	href := regexp.MustCompile(`(?i)\bhref\s*=\s*"([^"]*)"`)
	for _, job := range []string{"100", "300", "2002"} {
		col, err := collectJob(t, shared, job, -1, false)
		if err != nil && col == nil {
			t.Fatal(err)
		}
		html := render(t, col.Summary)
		low := strings.ToLower(html)
		for _, bad := range []string{"http://", "https://", "//", "<script", "<link", "<img", "<iframe", "<object", "<embed", "src=", "url(", "@import", "@font-face"} {
			if strings.Contains(low, bad) {
				i := strings.Index(low, bad)
				t.Errorf("job %s: the report has %q: …%s…", job, bad, html[max(0, i-60):min(len(html), i+60)])
			}
		}
		for _, m := range href.FindAllStringSubmatch(html, -1) {
			if u := m[1]; strings.HasPrefix(u, "/") || strings.Contains(strings.SplitN(u, "/", 2)[0], ":") {
				t.Errorf("job %s: link %q is not relative to the job folder", job, u)
			}
		}
	}
}
