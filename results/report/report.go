package report

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/compare"
	"github.com/benchctl/benchctl/results/stats"
)

//go:embed report.html.tmpl
var reportSource string

var reportTemplate = sync.OnceValues(func() (*template.Template, error) {
	return template.New("report").Funcs(template.FuncMap{
		"f1":        func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"stat":      stats.FormatStat,
		"pct":       func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" },
		"add":       func(a, b float64) float64 { return a + b },
		"trendJobs": func() int { return TrendJobs },
		// Reasons and excerpts quote what nodes and containers wrote: credential-like
		// values in them are hidden (reportfail.go).
		"redact": redactQuoted,
	}).Parse(reportSource)
})

// Report limits: beyond them the report summarises instead of drawing every node.
const (
	maxBarNodes      = 64  // per-node bars; more nodes get a histogram
	maxCharts        = 8   // rows charted per benchmark
	maxFailedListed  = 200 // failed nodes per benchmark listed at all
	maxCandidates    = 16  // candidates listed per benchmark
	excerptLines     = 40
	excerptMaxBytes  = 16 << 10
	chartWidth       = 760
	chartLabelWidth  = 150
	chartBarWidth    = 500
	chartRowHeight   = 18
	histogramBins    = 30
	histogramHeight  = 150
	stripCell        = 12
	stripCellsPerRow = 50
)

// WriteReport renders the report of a summary alone (a View without the job's past).
func WriteReport(w io.Writer, s *results.Summary) error {
	return WriteView(w, &View{Summary: s})
}

// WriteView renders report.html for a view made by Collect: one self-contained page
// (inline CSS and SVG, no scripts, no network) with the GPU model in its header and, per
// benchmark, the winning value rounded with the median beside it, per-node bars on an axis
// that shows a few percent (or a histogram) with the slowest nodes named, the status,
// durations, the rows as the CSV wrote them, and the failed nodes: a few with the first
// lines of their diagnostics, many as a compact list by reason. Links to node logs are
// relative to the job folder. html/template escapes markup in what containers wrote; their
// control and bidi characters, which a browser would act on (reordering what is shown),
// are then shown as text (textsafe.Text: \u202e, \x1b).
func WriteView(w io.Writer, v *View) error {
	t, err := reportTemplate()
	if err != nil {
		return fmt.Errorf("report template: %w", err)
	}
	var page strings.Builder
	if err := t.Execute(&page, newPage(v)); err != nil {
		return err
	}
	_, err = io.WriteString(w, textsafe.Text(page.String()))
	return err
}

// page is what the template renders.
type page struct {
	S          *results.Summary
	Collected  string
	Image      string
	GPU        string // "AMD Instinct MI300X (gfx942)", or what the nodes said of it
	Benchmarks []benchView
	NodeFails  failList
	Experiment *expView // a job with an experiment: Benchmarks are then its failed trial runs
	Trend      []trendChart
	VsRef      *compare.Comparison // against the manifest's reference job
	RefName    string
	RefLines   [][]string
}

type benchView struct {
	Image       string // the image it ran on, when the job's benchmarks ran on several
	B           *results.BenchmarkSummary
	ID          string
	Reason      string // B.Reason without the failed nodes it names (they are listed)
	Headline    string // the winning value, rounded
	HeadExact   string // the winning value as its CSV wrote it
	HeadMetric  string
	HeadModel   string // the row's model, when it is not the benchmark's name
	HeadMedian  string // the median over the nodes, rounded ("" for one node)
	Spread      string
	WinnerLabel string
	WinnerLink  string
	Durations   string
	GPUs        string
	Strip       strip
	Charts      []chart
	MoreRows    int
	Rows        []results.RowSummary // the first maxTableRows rows of the table
	HiddenRows  int                  // rows left out of the table (all are in perf.csv)
	Failed      failList
	Candidates  []results.Candidate
	MoreCands   int
	Tel         *telView // nil: no node left telemetry of it
	Tools       string   // the tools it ran under, in the order they stacked
	Artefacts   []artView
	ArtCount    int  // files Artefacts list
	ArtOpen     bool // listed open (short), else collapsed
	ArtUnlisted int  // nodes whose artefacts are not listed
}

type failView struct {
	results.NodeFailure
	Excerpt   string
	Truncated bool
}

func newPage(rv *View) *page {
	s := rv.Summary
	v := &page{S: s, Collected: s.CollectedAt.Format("2006-01-02 15:04:05 MST"), Image: s.Image.ID, GPU: gpuLine(s)}
	if len(v.Image) > 19 {
		v.Image = v.Image[:19] + "…"
	}
	v.NodeFails = newFailList(s.NodeFailures, "")
	if s.Experiment != nil {
		v.Experiment = newExpView(s)
	}
	v.Trend = newTrendCharts(rv.Trend, s.Job)
	if rv.VsRef != nil {
		v.VsRef, v.RefName = rv.VsRef, rv.RefName
		for _, ch := range rv.VsRef.Changes {
			pct := "-"
			if ch.Percent != nil {
				pct = compare.FormatPercent(*ch.Percent, ch.Tolerance)
			}
			v.RefLines = append(v.RefLines, []string{strings.Join(compare.NonEmpty(ch.Model, ch.Metric, ch.Key), " "), results.Dash(ch.Base), results.Dash(ch.New), pct,
				stats.FormatStat(ch.Tolerance) + "%", ch.Verdict, compare.ChangeNote(ch)})
		}
	}
	for i := range s.Benchmarks {
		if s.Experiment != nil && s.Benchmarks[i].Trial > 0 && s.Benchmarks[i].Status != results.StatusFailure {
			continue // a trial's value is in the experiment's table and strips
		}
		if s.Experiment != nil && len(v.Benchmarks) == maxFailedTrialSections {
			v.Experiment.FailedRuns++
			continue
		}
		v.Benchmarks = append(v.Benchmarks, newBenchView(s, &s.Benchmarks[i], i))
	}
	return v
}

// gpuLine is the job's GPU model and architecture for the header: "AMD Instinct MI300X
// (gfx942)", "gfx942" without a name, "" when the nodes did not say.
func gpuLine(s *results.Summary) string {
	name, arch := strings.ReplaceAll(s.GPUName, ",", ", "), strings.ReplaceAll(s.GPUArch, ",", ", ")
	switch {
	case name != "" && arch != "":
		return name + " (" + arch + ")"
	case name != "":
		return name
	}
	return arch
}

// maxTableRows is how many rows of a benchmark the report's table shows: a CSV of
// thousands of rows would make the page unreadable (and megabytes long); perf.csv has all.
const maxTableRows = 200

func newBenchView(s *results.Summary, b *results.BenchmarkSummary, i int) benchView {
	bv := benchView{B: b, ID: fmt.Sprintf("b%d", i), Reason: briefReason(b, s.Nodes.Expected)}
	if len(s.Images) > 0 && s.JobJSON() != nil {
		im := s.JobJSON().ImageOf(b.Name)
		bv.Image = results.CmpOr(im.Tag, im.ID)
	}
	if w := b.Winner; w != nil {
		bv.WinnerLabel = w.Label()
		bv.WinnerLink = w.File
		for _, r := range b.Rows {
			if results.HasPerformance(r.Performance) {
				bv.HeadExact, bv.HeadMetric = strings.TrimSpace(r.Performance), r.Metric
				bv.Headline = readableRaw(r.Performance)
				if r.Model != b.Name {
					bv.HeadModel = r.Model
				}
				if st := r.Stats; st.Nodes > 1 {
					bv.HeadMedian = readable(st.Median)
					bv.Spread = fmt.Sprintf("spread over %d nodes: min %s (%s) · median %s · max %s (%s) · stdev %s · cv %s",
						st.Nodes, readableRaw(st.Min), nodeLabel(s, st.MinRank), readable(st.Median), readableRaw(st.Max), nodeLabel(s, st.MaxRank),
						readable(st.Stdev), percent(st.CV))
				} else if st.Nodes == 1 {
					bv.Spread = "one node reported this value"
				}
				break
			}
		}
	}
	if d := b.Durations; d.Nodes > 0 {
		bv.Durations = fmt.Sprintf("%s s on average over %s (min %s s, max %s s)", readable(d.Mean), results.Plural(d.Nodes, "node", "nodes"), readable(d.Min), readable(d.Max))
	}
	if b.GPUsPerNode > 0 {
		bv.GPUs = fmt.Sprintf("%s per node, %d in all", results.Plural(b.GPUsPerNode, "GPU", "GPUs"), b.GPUs)
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
	bv.Tel = newTelView(s.Path(), b)
	bv.Failed = newFailList(b.Failed, s.Path())
	bv.Candidates = b.Candidates[:min(len(b.Candidates), maxCandidates)]
	bv.MoreCands = len(b.Candidates) - len(bv.Candidates)
	bv.Tools = strings.Join(b.Tools, ", ")
	bv.Artefacts, bv.ArtCount = artefactsView(b)
	bv.ArtOpen, bv.ArtUnlisted = bv.ArtCount <= artefactsOpen, b.ArtefactNodesUnlisted
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
