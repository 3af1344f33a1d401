package tests

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/bench/collect/synth"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results/collect"
)

// findChromium returns headless Chromium, or skips (fails with CI=true) when there is none.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed, and CI=true requires the report test: run tests/setup-chromium.sh")
	}
	t.Skip("chromium is not installed: run tests/setup-chromium.sh (as root it installs Debian's chromium) to render report.html")
	return ""
}

// chromium runs headless Chromium on a file with a fresh profile and returns its stdout.
func chromium(t *testing.T, bin, file string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, args...)
	all = append(all, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// report.html renders in a real browser: one SVG per benchmark, the failed nodes named with
// their escaped diagnostics, nothing executable, and a screenshot that is not blank; the
// headline rounded with the median beside it, the tables as the CSVs wrote them, the axis
// that does not start at zero said so, the slowest nodes named, the GPU in the header, and
// many failed nodes as a compact list that names at most 10 outside its <details>.
// The screenshots and reports are kept with `go test ./tests -run Report -artifacts -outputdir DIR`.
func TestReportRendersInChromium(t *testing.T) {
	bin := findChromium(t)
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.CopyFS(shared, os.DirFS("../results/testdata/shared")); err != nil {
		t.Fatal(err)
	}
	if _, err := synth.WriteJob(shared, synth.Options{JobID: "7001", Nodes: 300, Rows: 2, FailEvery: 60, MissingEvery: 100, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	// A 3-node job on known GPUs, and 200 nodes of which 40 failed.
	three, err := synth.WriteJob(shared, synth.Options{JobID: "7003", Nodes: 3, Rows: 3, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	setGPU(t, three, "AMD Instinct MI300X", "gfx942")
	if _, err := synth.WriteJob(shared, synth.Options{JobID: "7200", Nodes: 200, Rows: 2, FailEvery: 5, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	const nnbsp, minus = "\u202f", "\u2212" // the report's digit group separator and minus sign
	cases := []struct {
		job        string
		benchmarks int
		dom        []string // in the DOM
		absent     []string // not in the DOM
		maxNamed   int      // failed nodes named outside the <details> of every failed node (0: no limit)
	}{
		{"100", 2, []string{`class="bar win"`, "spread over 3 nodes", `href="nodes/1-n2/results/train/train.csv"`,
			// rounded in the headline and charts, the median beside the winner, the axis said
			"14" + nnbsp + "164</span>", "(winner 0-n1)", "· median 14" + nnbsp + "000", "axis starts at 13" + nnbsp + "000, not at zero",
			"axis starts at 96, not at zero", "slowest: ", `data-slow="2-n3"`, "2-n3 (" + minus + "3.6" + nnbsp + "% vs median)",
			`<td class="num">200.25</td>`, `<td class="num">14164</td>`, // the tables as the CSVs wrote them
			"GPU model not recorded by the nodes"}, nil, 0},
		{"300", 1, []string{`data-node="1-f2"`, `data-node="0-f1"`, "&lt;script&gt;alert('x')&lt;/script&gt; &amp; other markup", "no node produced a result"}, nil, 0},
		{"7001", 1, []string{`data-node="59-node00059"`, "292 nodes in 30 bins", "never reported: 3", "slowest: ",
			`<span class="count">5 nodes</span>`, "every failed node (8)"}, nil, 0},
		{"7003", 1, []string{"GPU <strong>AMD Instinct MI300X (gfx942)</strong>", "(bench0_0, winner 0-node00000)", "· median 993.4",
			"axis starts at 960, not at zero", "slowest: 0-node00000 (" + minus + "0.1" + nnbsp + "% vs median)", `<td class="num">992.17</td>`},
			[]string{"Failed nodes"}, 0},
		{"7200", 1, []string{"Failed nodes (40)", `<p class="reason">40 of 200 nodes failed</p>`, `<span class="count">40 nodes</span>`, "and 30 more",
			"every failed node (40)", `data-node="199-node00199"`, "160 nodes in 30 bins", "slowest: "},
			[]string{`class="failed-node"`, "4-node00004 (timeout"}, 10},
	}
	for _, c := range cases {
		t.Run(c.job, func(t *testing.T) {
			col, err := collect.Collect(context.Background(), collect.CollectOptions{SharedDir: shared, JobID: c.job, Attempt: -1})
			if err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(col.Dir.Path, jobdir.ReportFile)
			dom := string(chromium(t, bin, report, "--dump-dom"))
			sections := regexp.MustCompile(`(?s)<section class="bench" id="b\d+".*?</section>`).FindAllString(dom, -1)
			if len(sections) != c.benchmarks {
				t.Fatalf("%d benchmark sections in the DOM, want %d", len(sections), c.benchmarks)
			}
			for i, s := range sections {
				if !strings.Contains(s, "<svg") {
					t.Errorf("benchmark section %d has no svg", i)
				}
			}
			for _, want := range c.dom {
				if !strings.Contains(dom, want) {
					t.Errorf("the DOM lacks %q", want)
				}
			}
			for _, bad := range c.absent {
				if strings.Contains(dom, bad) {
					t.Errorf("the DOM has %q", bad)
				}
			}
			if c.maxNamed > 0 {
				outside := regexp.MustCompile(`(?s)<details class="all-failed">.*?</details>`).ReplaceAllString(dom, "")
				for i, s := range regexp.MustCompile(`(?s)<section class="bench".*?</section>`).FindAllString(outside, -1) {
					if n := strings.Count(s, `data-node="`); n > c.maxNamed {
						t.Errorf("section %d names %d failed nodes outside the list behind <details>, want at most %d", i, n, c.maxNamed)
					}
				}
			}
			if strings.Contains(dom, "<script") || strings.Contains(dom, "<iframe") {
				t.Error("the DOM has a script or an iframe")
			}
			if data, _ := os.ReadFile(report); regexp.MustCompile(`(?i)https?://|<link|\bsrc=|url\(|@import`).Match(data) {
				t.Error("report.html refers to something outside itself")
			}

			shot := filepath.Join(t.ArtifactDir(), "report-"+c.job+".png")
			chromium(t, bin, report, "--screenshot="+shot, "--window-size=1100,1800", "--hide-scrollbars")
			checkPNG(t, shot)
			data, _ := os.ReadFile(report)
			os.WriteFile(filepath.Join(t.ArtifactDir(), "report-"+c.job+".html"), data, 0o644)
		})
	}
}

// setGPU records a GPU model and architecture in every status.json of a job folder, as the
// nodes' inventories would have.
func setGPU(t *testing.T, job, name, arch string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(jobdirtest.At(job).Nodes(), "*", jobdir.StatusFile))
	if err != nil || len(files) == 0 {
		t.Fatalf("no status files in %s: %v", job, err)
	}
	for _, f := range files {
		st, err := jobdir.ReadStatus(f)
		if err != nil {
			t.Fatal(err)
		}
		st.GPUCount, st.GPUName, st.GPUArch = 8, name, arch
		if err := jobdir.WriteStatus(f, st); err != nil {
			t.Fatal(err)
		}
	}
}

// checkPNG says that a screenshot exists and is not trivial: big, and not one colour.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dy() < 800 {
		t.Fatalf("screenshot is %v", b)
	}
	colours := map[[3]uint32]int{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
			if r>>8 < 200 || g>>8 < 200 || bl>>8 < 200 {
				ink++
			}
		}
	}
	samples := (b.Dx() / 2) * (b.Dy() / 2)
	if len(colours) < 20 || ink < samples/100 {
		t.Fatalf("screenshot looks blank: %d colours, %d of %d samples with ink", len(colours), ink, samples)
	}
}
