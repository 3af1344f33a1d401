package telemetry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/gpu/gputest"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/jobdir"
)

func f64(v float64) *float64 { return &v }
func u32(v uint32) *uint32   { return &v }

// steady is a GPU drawing watts, its counter rising with it, clocks and limits as given.
func steady(index int, watts, counter float64, limit gpu.Throttle) gpu.Reading {
	mem := uint64(1 << 30)
	return gpu.Reading{Index: index, PowerW: f64(watts), EnergyJ: f64(counter), GFXClockMHz: u32(1980), MemClockMHz: u32(2619),
		TemperatureC: f64(60), UtilPercent: f64(99), MemoryUsedBytes: &mem, Throttle: limit, ThrottleKnown: true}
}

func twoGPUs() []gpu.GPU {
	return []gpu.GPU{{Index: 0, UUID: "GPU-0", Name: "H100"}, {Index: 1, UUID: "GPU-1", Name: "H100"}}
}

func TestSeriesEnergyFromTheCounterAndPower(t *testing.T) {
	start := time.Unix(1000, 0).UTC()
	var buf bytes.Buffer
	s := newSeries(&buf, "b", "nvml", time.Second, start, twoGPUs(), jobdir.MaxTelemetrySeriesSize)
	for i := 0; i <= 10; i++ {
		r0 := steady(0, 300, 5000+300*float64(i), 0)
		r1 := steady(1, 200, 0, 0)
		r1.EnergyJ = nil // no counter: integrated power
		if i == 5 {
			r0.Throttle = gpu.ThrottlePower | gpu.ThrottleOther
		}
		s.add(start.Add(time.Duration(i)*time.Second), []gpu.Reading{r0, r1, {Index: 7, PowerW: f64(1)}})
	}
	sum, err := s.finish(start.Add(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 11 || len(sum.GPUs) != 2 {
		t.Fatalf("summary: %+v", sum)
	}
	g0, g1 := sum.GPUs[0], sum.GPUs[1]
	if *g0.EnergyJ != 3000 || g0.EnergyFrom != "counter" {
		t.Errorf("GPU 0: %v J from %s, want 3000 from counter", *g0.EnergyJ, g0.EnergyFrom)
	}
	if *g1.EnergyJ != 2000 || g1.EnergyFrom != "power" {
		t.Errorf("GPU 1: %v J from %s, want 2000 from power", *g1.EnergyJ, g1.EnergyFrom)
	}
	if *g0.AvgPowerW != 300 || *g0.PeakPowerW != 300 || g0.Throttled != 1 || g0.ThrottleKnown != 11 || g0.Reasons != "power+other" {
		t.Errorf("GPU 0 stats: %+v", g0)
	}
	if sum.Rows != 22 {
		t.Errorf("%d rows, want one per GPU per sample (22)", sum.Rows)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 23 || !strings.HasPrefix(lines[0], `{"telemetry":1,"run":"b","source":"nvml","interval":"1s"`) {
		t.Errorf("series:\n%s", buf.String())
	}
}

func TestSeriesCounterThatGoesBackwardsIsBridgedByPower(t *testing.T) {
	start := time.Unix(0, 0).UTC()
	s := newSeries(io.Discard, "b", "amdsmi", time.Second, start, twoGPUs()[:1], jobdir.MaxTelemetrySeriesSize)
	counters := []float64{4294967000, 4294967100, 50, 150, 250} // a 32-bit-ish counter wraps after the second sample
	for i, c := range counters {
		s.add(start.Add(time.Duration(i)*time.Second), []gpu.Reading{steady(0, 100, c, 0)})
	}
	// A jump forwards faster than any GPU draws is a reset too.
	s.add(start.Add(5*time.Second), []gpu.Reading{steady(0, 100, 1e9, 0)})
	sum, _ := s.finish(start.Add(5 * time.Second))
	g := sum.GPUs[0]
	if *g.EnergyJ != 500 || g.EnergyFrom != "counter+power" {
		t.Errorf("energy %v from %s, want 500 J from counter+power", *g.EnergyJ, g.EnergyFrom)
	}
	if len(sum.Unavailable) != 1 || sum.Unavailable[0].Field != "energyCounter" || !strings.Contains(sum.Unavailable[0].Why, "wrapped or reset") {
		t.Errorf("the counter's jumps are said once: %+v", sum.Unavailable)
	}
}

func TestSeriesGPUThatStopsAnswering(t *testing.T) {
	start := time.Unix(0, 0).UTC()
	var buf bytes.Buffer
	s := newSeries(&buf, "b", "nvml", time.Second, start, twoGPUs()[:1], jobdir.MaxTelemetrySeriesSize)
	lost := errors.New("NVML: GPU is lost")
	for i := 0; i < 6; i++ {
		r := steady(0, 100, 100*float64(i), 0)
		if i >= 3 {
			r = gpu.Reading{Index: 0, Err: lost}
		}
		s.add(start.Add(time.Duration(i)*time.Second), []gpu.Reading{r})
	}
	sum, _ := s.finish(start.Add(6 * time.Second))
	g := sum.GPUs[0]
	if g.Samples != 3 || g.Unanswered != 3 || *g.EnergyJ != 200 {
		t.Errorf("GPU: %+v (energy %v)", g, *g.EnergyJ)
	}
	if !strings.Contains(buf.String(), `"error":"NVML: GPU is lost","unanswered":1`) {
		t.Errorf("the silent samples are rows that say so:\n%s", buf.String())
	}
}

// A 48-hour run sampled every 100 ms stays within the levels' bound, and so does its file.
func TestSeriesOfTwoDaysIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("1.7 million samples")
	}
	start := time.Unix(0, 0).UTC()
	var cw countWriter
	s := newSeries(&cw, "b", "nvml", 100*time.Millisecond, start, twoGPUs()[:1], jobdir.MaxTelemetrySeriesSize)
	samples := 48 * 3600 * 10
	r := []gpu.Reading{steady(0, 500, 0, 0)}
	for i := 0; i < samples; i++ {
		*r[0].EnergyJ = 50 * float64(i)
		s.add(start.Add(time.Duration(i)*100*time.Millisecond), r)
	}
	sum, err := s.finish(start.Add(48 * time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	bound := int(jobdir.TelemetryLevelRows * (1 + math.Ceil(math.Log2(float64(samples)/jobdir.TelemetryLevelRows))))
	if sum.Rows > bound || sum.Stopped {
		t.Errorf("%d rows for %d samples, bound %d (stopped %v)", sum.Rows, samples, bound, sum.Stopped)
	}
	if cw.n > 4<<20 {
		t.Errorf("the series of one GPU is %d bytes", cw.n)
	}
	if want := 50 * float64(samples-1); *sum.GPUs[0].EnergyJ != want || sum.GPUs[0].Samples != samples {
		t.Errorf("energy %v over %d samples, want %v over %d", *sum.GPUs[0].EnergyJ, sum.GPUs[0].Samples, want, samples)
	}
	t.Logf("48 h at 100 ms: %d rows, %d bytes", sum.Rows, cw.n)
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

func TestSeriesStopsAtItsSizeLimit(t *testing.T) {
	start := time.Unix(0, 0).UTC()
	var buf bytes.Buffer
	s := newSeries(&buf, "b", "nvml", time.Second, start, twoGPUs(), 4096)
	for i := 0; i < 100; i++ {
		s.add(start.Add(time.Duration(i)*time.Second), []gpu.Reading{steady(0, 1, float64(i), 0), steady(1, 1, float64(i), 0)})
	}
	sum, _ := s.finish(start.Add(100 * time.Second))
	if !sum.Stopped || buf.Len() > 4096 || sum.GPUs[0].Samples != 100 {
		t.Errorf("stopped %v, %d bytes, %d samples counted", sum.Stopped, buf.Len(), sum.GPUs[0].Samples)
	}
	if !strings.HasSuffix(buf.String(), "\"stopped\":true}\n") {
		t.Errorf("the last line says the series stopped:\n%s", buf.String()[max(0, buf.Len()-200):])
	}
}

// fakeSampler answers with readings from a function; block makes Sample wait for its
// context (a library that does not answer).
type fakeSampler struct {
	mu      sync.Mutex
	read    func(n int) []gpu.Reading
	n       int
	unavail []gpu.Unavailable
	block   chan struct{}
	closed  bool
}

func (f *fakeSampler) Sample(ctx context.Context) []gpu.Reading {
	if f.block != nil {
		<-f.block
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return f.read(f.n)
}
func (f *fakeSampler) Source() string { return "fake" }
func (f *fakeSampler) Unavailable() []gpu.Unavailable {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unavail
}
func (f *fakeSampler) Close() error { f.closed = true; return nil }

func telemetryRun(t testing.TB, every time.Duration, open OpenSampler, sel GPUAccess) (*nodeRun, *testutil.SyncBuffer) {
	t.Helper()
	shared := t.TempDir()
	nf := testNodeFolder(t, shared, "1", 0, "n1")
	var logs testutil.SyncBuffer
	r := &nodeRun{log: slog.New(slog.NewTextHandler(&logs, nil)), nf: nf,
		nd: jobdir.Layout{Shared: shared}.Job("1", 0).Node(0, "n1")}
	r.tel = New(every, open, sel.Vendor, sel.GPUs)
	t.Cleanup(r.tel.Close)
	return r, &logs
}

func readSummary(t testing.TB, r *nodeRun, run string) *jobdir.TelemetrySummary {
	t.Helper()
	var rd safefile.Reader
	s, err := jobdir.ReadTelemetrySummary(&rd, r.nd.TelemetrySummary(run))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSampleDuringARun(t *testing.T) {
	synctest.Test(t, sampleDuringARun) // the samples' times are the bubble's: as many as asked, on any machine
}

func sampleDuringARun(t *testing.T) {
	fs := &fakeSampler{read: func(n int) []gpu.Reading {
		return []gpu.Reading{steady(0, 400, 400*float64(n)/10, 0), steady(1, 400, 0, gpu.ThrottleThermal)}
	}, unavail: []gpu.Unavailable{{GPU: 1, Field: "energy", Why: "not supported"}, {GPU: 5, Field: "power", Why: "another GPU"}}}
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()}
	r, _ := telemetryRun(t, 100*time.Millisecond, func(context.Context, gpu.Inventory) (gpu.Sampler, error) { return fs, nil }, sel)
	stop := r.sampleDuring(context.Background(), "b@1", sel)
	time.Sleep(550 * time.Millisecond)
	stop()
	s := readSummary(t, r, "b@1")
	if s.Samples < 3 || s.Source != "fake" || len(s.GPUs) != 2 || s.GPUs[1].Throttled != s.GPUs[1].ThrottleKnown {
		t.Errorf("summary: %+v", s)
	}
	if len(s.Unavailable) != 1 || s.Unavailable[0].GPU != 1 {
		t.Errorf("only this run's GPUs' notes, once: %+v", s.Unavailable)
	}
	rows := 0
	h, err := jobdir.ReadTelemetrySeries(r.nd.Path, jobdir.TelemetryRel("b@1"), func(jobdir.TelemetryRow) { rows++ })
	if err != nil || h.Run != "b@1" || rows != 2*s.Samples {
		t.Errorf("series: %+v, %d rows for %d samples, %v", h, rows, s.Samples, err)
	}
	// The second run uses the same sampler; one GPU only.
	stop = r.sampleDuring(context.Background(), "c", GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()[1:]})
	stop()
	if s := readSummary(t, r, "c"); len(s.GPUs) != 1 || s.GPUs[0].Index != 1 || s.Samples < 1 {
		t.Errorf("second run: %+v", s)
	}
}

func TestTelemetryUnavailableIsSaidOnce(t *testing.T) {
	synctest.Test(t, telemetryUnavailableIsSaidOnce) // the samples' times are the bubble's: as many as asked, on any machine
}

func telemetryUnavailableIsSaidOnce(t *testing.T) {
	open := func(context.Context, gpu.Inventory) (gpu.Sampler, error) {
		return nil, errors.New("NVML: libnvidia-ml.so.1 not found")
	}
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()}
	r, logs := telemetryRun(t, 100*time.Millisecond, open, sel)
	for _, run := range []string{"a", "b"} {
		stop := r.sampleDuring(context.Background(), run, sel)
		time.Sleep(250 * time.Millisecond)
		stop()
		s := readSummary(t, r, run)
		if len(s.GPUs) != 0 || len(s.Unavailable) != 1 || s.Unavailable[0].Why != "NVML: libnvidia-ml.so.1 not found" || s.Unavailable[0].Field != "gpu" {
			t.Errorf("%s: %+v", run, s)
		}
		data, _ := os.ReadFile(r.nd.Telemetry(run))
		if !strings.Contains(string(data), `{"t":0,"dt":0,"gpu":-1,"n":0,"note":"NVML: libnvidia-ml.so.1 not found","field":"gpu"}`) {
			t.Errorf("%s: the note says when (at the start) and why:\n%s", run, data)
		}
		if n := strings.Count(string(data), "\n"); n != 2 {
			t.Errorf("%s: the series is its header and one note, not a line per sample:\n%s", run, data)
		}
	}
	if n := strings.Count(logs.String(), "GPU telemetry unavailable"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}

	// A node without GPUs says so too.
	r, _ = telemetryRun(t, time.Second, open, GPUAccess{Vendor: gpu.VendorNone})
	r.sampleDuring(context.Background(), "cpu", GPUAccess{Vendor: gpu.VendorNone})()
	if s := readSummary(t, r, "cpu"); len(s.Unavailable) != 1 || !strings.Contains(s.Unavailable[0].Why, "without GPUs") {
		t.Errorf("no GPUs: %+v", s.Unavailable)
	}
}

func TestTelemetryOffWritesNothing(t *testing.T) {
	r, _ := telemetryRun(t, 0, nil, GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()})
	r.sampleDuring(context.Background(), "b", GPUAccess{})()
	if _, err := os.Stat(filepath.Dir(r.nd.Telemetry("b"))); !os.IsNotExist(err) {
		t.Errorf("telemetry: off made %v", err)
	}
}

// A library that never answers delays the end of a run by stopWait at most, and is not
// used again. On the bubble's clock: the bound is exact, whatever the machine's load.
func TestSamplerThatHangsDoesNotHoldTheRun(t *testing.T) {
	synctest.Test(t, samplerThatHangsDoesNotHoldTheRun)
}

func samplerThatHangsDoesNotHoldTheRun(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	fs := &fakeSampler{block: block, read: func(int) []gpu.Reading { return nil }}
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()}
	r, logs := telemetryRun(t, 100*time.Millisecond, func(context.Context, gpu.Inventory) (gpu.Sampler, error) { return fs, nil }, sel)
	stop := r.sampleDuring(context.Background(), "b", sel)
	began := time.Now()
	stop()
	if d := time.Since(began); d > stopWait {
		t.Errorf("stopping took %v, more than stopWait (%v)", d, stopWait)
	}
	if !strings.Contains(logs.String(), "did not answer in time") {
		t.Errorf("logs: %s", logs.String())
	}
	r.sampleDuring(context.Background(), "c", sel)()
	if s := readSummary(t, r, "c"); len(s.Unavailable) != 1 || !strings.Contains(s.Unavailable[0].Why, "stopped answering during b") {
		t.Errorf("the next run: %+v", s)
	}
}

// A telemetry folder planted as a link is not written through.
func TestTelemetryFolderLinkIsRefused(t *testing.T) {
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()}
	fs := &fakeSampler{read: func(int) []gpu.Reading { return nil }}
	r, logs := telemetryRun(t, time.Second, func(context.Context, gpu.Inventory) (gpu.Sampler, error) { return fs, nil }, sel)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(r.nd.Path, jobdir.TelemetryFolder)); err != nil {
		t.Fatal(err)
	}
	r.sampleDuring(context.Background(), "b", sel)()
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("wrote through the link: %v", ents)
	}
	if !strings.Contains(logs.String(), "cannot create the series file") {
		t.Errorf("logs: %s", logs.String())
	}
}

// BenchmarkSeriesAdd is the sampling loop's own cost per round of 8 GPUs, beyond the
// library's (gpu's BenchmarkSample*): folding the readings, writing rows, the energy.
// docs/PERFORMANCE.md turns it into a share of a core at 1 s and 100 ms.
func BenchmarkSeriesAdd(b *testing.B) {
	gpus := make([]gpu.GPU, 8)
	rs := make([]gpu.Reading, 8)
	for i := range gpus {
		gpus[i] = gpu.GPU{Index: i, UUID: "GPU-" + strconv.Itoa(i), Name: "H100"}
		rs[i] = steady(i, 650, 0, 0)
	}
	start := time.Now()
	s := newSeries(io.Discard, "b", "nvml", 100*time.Millisecond, start, gpus, jobdir.MaxTelemetrySeriesSize)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range rs {
			*rs[j].EnergyJ = 65 * float64(i)
		}
		s.add(start.Add(time.Duration(i)*100*time.Millisecond), rs)
	}
}

// A GPU library slow to open never delays the container's start: sampleDuring returns at
// once and the samples begin when the library answers. On the bubble's clock: "at once"
// is no time at all, whatever the machine's load.
func TestSlowLibraryDoesNotDelayTheStart(t *testing.T) {
	synctest.Test(t, slowLibraryDoesNotDelayTheStart)
}

func slowLibraryDoesNotDelayTheStart(t *testing.T) {
	fs := &fakeSampler{read: func(n int) []gpu.Reading { return []gpu.Reading{steady(0, 100, float64(n), 0)} }}
	open := func(context.Context, gpu.Inventory) (gpu.Sampler, error) {
		time.Sleep(time.Second)
		return fs, nil
	}
	sel := GPUAccess{Vendor: gpu.VendorNVIDIA, GPUs: twoGPUs()[:1]}
	r, _ := telemetryRun(t, 100*time.Millisecond, open, sel)
	began := time.Now()
	stop := r.sampleDuring(context.Background(), "b", sel)
	if d := time.Since(began); d != 0 { // the open alone takes 1 s
		t.Errorf("sampleDuring held the start for %v", d)
	}
	time.Sleep(1500 * time.Millisecond)
	stop()
	if s := readSummary(t, r, "b"); s.Samples < 2 || s.Source != "fake" {
		t.Errorf("summary: %+v", s)
	}
}

// A run's telemetry integrates energy by the rule gpus --watch does: on the script every
// integrator is held to (gputest.EnergyScript), its summary says the same joules as
// cmd/benchctl's TestWatchEnergyIsTheTelemetrysEnergy.
func TestTelemetryEnergyIsTheWatchsEnergy(t *testing.T) {
	start := time.Unix(0, 0).UTC()
	s := newSeries(io.Discard, "b", "nvml", time.Second, start, twoGPUs()[:1], jobdir.MaxTelemetrySeriesSize)
	script := gputest.EnergyScript()
	for i, rs := range script {
		s.add(start.Add(time.Duration(i)*time.Second), rs)
	}
	sum, err := s.finish(start.Add(time.Duration(len(script)-1) * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g := sum.GPUs[0]; g.EnergyJ == nil || *g.EnergyJ != gputest.EnergyScriptJ || g.EnergyFrom != "counter+power" {
		t.Errorf("summary: %+v", g)
	}
}
