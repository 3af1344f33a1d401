package results

import (
	"bytes"
	"fmt"
	"github.com/benchctl/benchctl/jobdir"
	"strings"
	"testing"
)

func render(t *testing.T, s *Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteReport(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestReportFailedJob(t *testing.T) {
	col, err := collect(t, sharedCopy(t), "300", -1, false)
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
		if strings.Contains(strings.ReplaceAll(html, "http://www.w3.org/2000/svg", ""), bad) {
			t.Errorf("report contains %q", bad)
		}
	}
}

func TestReportCharts(t *testing.T) {
	col, err := collect(t, sharedCopy(t), "100", -1, false)
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
	job := writeJob(t, shared, "11", 600)
	for r := range 600 {
		writeNode(t, job, r, jobdir.OutcomeSuccess, fmt.Sprintf("model,performance,metric\nm,%d,x\n", 1000+r%37))
	}
	s := aggregate(t, job)
	html := render(t, s)
	if !strings.Contains(html, "600 nodes in 30 bins") || strings.Count(html, "<rect") > 100 {
		t.Fatalf("no histogram, or too many marks (%d rects)", strings.Count(html, "<rect"))
	}
}

// Values at the ends of float64's range: the histogram's span overflows if computed naively.
func TestReportHistogramExtremeValues(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "12", 70)
	for r := range 70 {
		v := "1"
		switch r {
		case 0:
			v = "-1.7e308"
		case 1:
			v = "1.7e308"
		}
		writeNode(t, job, r, jobdir.OutcomeSuccess, "model,performance,metric\nm,"+v+",x\n")
	}
	s := aggregate(t, job)
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
