package results

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"github.com/benchctl/benchctl/internal/safefile"
	"html/template"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

//go:embed report.html.tmpl
var reportSource string

var reportTemplate = sync.OnceValues(func() (*template.Template, error) {
	return template.New("report").Funcs(template.FuncMap{
		"f1":   func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"stat": FormatStat,
		"pct":  func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" },
	}).Parse(reportSource)
})

// Report limits: beyond them the report summarises instead of drawing every node.
const (
	maxBarNodes      = 64  // per-node bars; more nodes get a histogram
	maxStripNodes    = 512 // one cell per node; more get a stacked bar
	maxCharts        = 8   // rows charted per benchmark
	maxExcerpts      = 20  // failed nodes per benchmark shown with a diagnostics excerpt
	maxFailedListed  = 200 // failed nodes per benchmark listed at all
	maxCandidates    = 16  // candidates listed per benchmark
	excerptLines     = 40
	excerptMaxBytes  = 16 << 10
	chartWidth       = 640
	chartLabelWidth  = 150
	chartBarWidth    = 380
	chartRowHeight   = 18
	histogramBins    = 30
	histogramHeight  = 150
	stripCell        = 12
	stripCellsPerRow = 50
)

// WriteReport renders report.html for a summary made by Aggregate: one self-contained page
// (inline CSS and SVG, no scripts, no network) with, per benchmark, the value, per-node bars
// and spread, the status, durations, and the failed nodes with the first lines of their
// diagnostics. Links to node logs are relative to the job folder.
func WriteReport(w io.Writer, s *Summary) error {
	t, err := reportTemplate()
	if err != nil {
		return fmt.Errorf("report template: %w", err)
	}
	return t.Execute(w, newReportView(s))
}

type reportView struct {
	S          *Summary
	Collected  string
	Image      string
	Benchmarks []benchView
	NodeFails  []NodeFailure
	MoreFails  int // nodes left out of NodeFails
}

type benchView struct {
	Image       string // the image it ran on, when the job's benchmarks ran on several
	B           *BenchmarkSummary
	ID          string
	Headline    string
	HeadMetric  string
	Spread      string
	WinnerLabel string
	WinnerLink  string
	Durations   string
	Strip       strip
	Charts      []chart
	MoreRows    int
	Rows        []RowSummary // the first maxTableRows rows of the table
	HiddenRows  int          // rows left out of the table (all are in perf.csv)
	Failed      []failView
	FailedNodes int // nodes the failures stand for (a run of missing nodes is one entry)
	MoreFailed  int // nodes left out of Failed
	Candidates  []Candidate
	MoreCands   int
}

type failView struct {
	NodeFailure
	Excerpt   string
	Truncated bool
}

func newReportView(s *Summary) *reportView {
	v := &reportView{S: s, Collected: s.CollectedAt.Format("2006-01-02 15:04:05 MST"), Image: s.Image.ID}
	if len(v.Image) > 19 {
		v.Image = v.Image[:19] + "…"
	}
	v.NodeFails = s.NodeFailures[:min(len(s.NodeFailures), maxFailedListed)]
	v.MoreFails = countNodes(s.NodeFailures[len(v.NodeFails):])
	for i := range s.Benchmarks {
		v.Benchmarks = append(v.Benchmarks, newBenchView(s, &s.Benchmarks[i], i))
	}
	return v
}

// maxTableRows is how many rows of a benchmark the report's table shows: a CSV of
// thousands of rows would make the page unreadable (and megabytes long); perf.csv has all.
const maxTableRows = 200

func newBenchView(s *Summary, b *BenchmarkSummary, i int) benchView {
	bv := benchView{B: b, ID: fmt.Sprintf("b%d", i)}
	if len(s.Images) > 0 && s.job != nil {
		im := s.job.ImageOf(b.Name)
		bv.Image = cmpOr(im.Tag, im.ID)
	}
	if w := b.Winner; w != nil {
		bv.WinnerLabel = w.Label()
		bv.WinnerLink = w.File
		for _, r := range b.Rows {
			if hasPerformance(r.Performance) {
				bv.Headline, bv.HeadMetric = r.Performance, r.Metric
				if r.Model != b.Name {
					bv.HeadMetric += " (" + r.Model + ")"
				}
				if st := r.Stats; st.Nodes > 1 {
					bv.Spread = fmt.Sprintf("spread over %d nodes: min %s · median %s · max %s · stdev %s · cv %.1f%%",
						st.Nodes, st.Min, FormatStat(st.Median), st.Max, FormatStat(st.Stdev), st.CV*100)
				} else if st.Nodes == 1 {
					bv.Spread = "one node reported this value"
				}
				break
			}
		}
	}
	if d := b.Durations; d.Nodes > 0 {
		bv.Durations = fmt.Sprintf("%s s on average over %s (min %s s, max %s s)", FormatStat(d.Mean), plural(d.Nodes, "node", "nodes"), FormatStat(d.Min), FormatStat(d.Max))
	}
	bv.Strip = nodeStrip(s, b)
	bv.Rows = b.Rows[:min(len(b.Rows), maxTableRows)]
	bv.HiddenRows = len(b.Rows) - len(bv.Rows)
	for _, r := range b.Rows {
		if len(bv.Charts) == maxCharts {
			bv.MoreRows++
			continue
		}
		if r.Stats.Nodes > 0 {
			bv.Charts = append(bv.Charts, valueChart(s, b, r))
		}
	}
	for j, f := range b.Failed {
		if j == maxFailedListed {
			break
		}
		fv := failView{NodeFailure: f}
		if j < maxExcerpts && f.Diagnostics != "" && s.path != "" {
			fv.Excerpt, fv.Truncated = excerpt(filepath.Join(s.path, filepath.FromSlash(f.Diagnostics), "summary.txt"))
		}
		bv.Failed = append(bv.Failed, fv)
	}
	bv.FailedNodes = countNodes(b.Failed)
	bv.MoreFailed = countNodes(b.Failed[len(bv.Failed):])
	bv.Candidates = b.Candidates[:min(len(b.Candidates), maxCandidates)]
	bv.MoreCands = len(b.Candidates) - len(bv.Candidates)
	return bv
}

// excerpt returns the first lines of a diagnostics summary, as valid UTF-8 text.
func excerpt(path string) (string, bool) {
	f, err := safefile.OpenNoFollow(path) // in the job folder: never a FIFO, never a link
	if err != nil {
		return "", false
	}
	defer f.Close()
	var buf bytes.Buffer
	sc := bufio.NewScanner(io.LimitReader(f, excerptMaxBytes))
	sc.Buffer(make([]byte, 4096), excerptMaxBytes)
	n, more := 0, false
	for sc.Scan() {
		if n == excerptLines {
			more = true
			break
		}
		buf.Write(sc.Bytes())
		buf.WriteByte('\n')
		n++
	}
	return strings.ToValidUTF8(buf.String(), "\uFFFD"), more
}
