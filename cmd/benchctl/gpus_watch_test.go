package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/gpu/gputest"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// fakeSampler answers samples[i] on the i-th Sample and cancels the command's context on
// the one after the last.
type fakeSampler struct {
	samples [][]gpu.Reading
	unavail [][]gpu.Unavailable // what Unavailable lists after each sample
	n       int
	cancel  context.CancelFunc
	closed  bool
}

func (f *fakeSampler) Sample(context.Context) []gpu.Reading {
	f.n++
	if f.n > len(f.samples) {
		f.cancel()
		return []gpu.Reading{{Index: 0, Err: errors.New("interrupted")}}
	}
	return f.samples[f.n-1]
}
func (f *fakeSampler) Source() string { return "fake" }
func (f *fakeSampler) Unavailable() []gpu.Unavailable {
	return f.unavail[min(f.n, len(f.unavail))-1]
}
func (f *fakeSampler) Close() error { f.closed = true; return nil }

func p[T any](v T) *T { return &v }

func watchSamples() ([][]gpu.Reading, [][]gpu.Unavailable) {
	samples := [][]gpu.Reading{
		{
			{Index: 0, PowerW: p(300.0), EnergyJ: p(1000.0), GFXClockMHz: p(uint32(1980)), MemClockMHz: p(uint32(2619)), TemperatureC: p(45.0),
				UtilPercent: p(99.0), MemoryUsedBytes: p(uint64(1 << 30)), ThrottleKnown: true},
			{Index: 3, PowerW: p(100.0), MemoryUsedBytes: p(uint64(0)), Throttle: gpu.ThrottlePower | gpu.ThrottleThermal, ThrottleKnown: true},
		},
		{
			{Index: 0, PowerW: p(310.0), EnergyJ: p(1300.5), GFXClockMHz: p(uint32(1755)), MemClockMHz: p(uint32(2619)), TemperatureC: p(46.0),
				UtilPercent: p(100.0), MemoryUsedBytes: p(uint64(1 << 30)), ThrottleKnown: true},
			{Index: 3, Err: errors.New("NVML: the GPU stopped answering: ERROR_GPU_IS_LOST (code 15)")},
		},
	}
	first := []gpu.Unavailable{{GPU: -1, Field: "source", Why: "amdsmi not used: --source sysfs"}, {GPU: 3, Field: "energy", Why: "no counter"}}
	second := append(append([]gpu.Unavailable{}, first...), gpu.Unavailable{GPU: 3, Field: "gpu", Why: "NVML: the GPU stopped answering"})
	return samples, [][]gpu.Unavailable{first, second, second}
}

// runWatch runs 'benchctl gpus ARGS' with the fake sampler, stdout a terminal or not.
func runWatch(t *testing.T, tty bool, args ...string) (string, string, *fakeSampler, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	samples, unavail := watchSamples()
	fake := &fakeSampler{samples: samples, unavail: unavail, cancel: cancel}
	var asked gpu.Inventory
	detect := func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{Vendor: "nvidia", Source: "nvml", GPUs: []gpu.GPU{{Index: 0}, {Index: 3}}}, nil
	}
	open := func(_ context.Context, _ gpu.Options, inv gpu.Inventory) (gpu.Sampler, error) {
		asked = inv
		return fake, nil
	}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { at = at.Add(time.Second); return at }
	var out, errb bytes.Buffer
	io := iostreams.New(strings.NewReader(""), &out, &errb)
	io.SetStdoutTTY(tty)
	cmd := newGpusCmdDeps(io, commands.GPUsDeps{Detect: detect, Open: open, Now: now, Lookup: os.LookupEnv,
		Hostname: func() (string, error) { return "gpu-01", nil }}, nil)
	cmd.SetArgs(args)
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	if err == nil && len(asked.GPUs) != 2 {
		t.Errorf("sampler opened for %+v", asked)
	}
	return out.String(), errb.String(), fake, err
}

const watchStderr = `telemetry: amdsmi not used: --source sysfs
telemetry: GPU 3: energy unavailable: no counter
telemetry: GPU 3: gpu unavailable: NVML: the GPU stopped answering
`

func TestGpusWatchTable(t *testing.T) {
	out, errs, fake, err := runWatch(t, true, "--watch", "100ms")
	want := "\033[H\033[2J" + `10:00:01  every 100ms  source fake  (Ctrl-C to stop)
GPU  POWER    ENERGY  GFX       MEM       TEMP   UTIL  MEM USED  THROTTLE
0    300.0 W  0.0 J   1980 MHz  2619 MHz  45 °C  99 %  1 GiB     none
3    100.0 W  ~0.0 J  -         -         -      -     0         power+thermal
` + "\033[H\033[2J" + `10:00:02  every 100ms  source fake  (Ctrl-C to stop)
GPU  POWER    ENERGY   GFX       MEM       TEMP   UTIL   MEM USED  THROTTLE
0    310.0 W  300.5 J  1755 MHz  2619 MHz  46 °C  100 %  1 GiB     none
3    NVML: the GPU stopped answering: ERROR_GPU_IS_LOST (code 15)
`
	if err != nil || out != want || errs != watchStderr || !fake.closed {
		t.Fatalf("err %v, closed %v, stdout:\n%q\nwant:\n%q\nstderr:\n%s", err, fake.closed, out, want, errs)
	}
}

func TestGpusWatchJSONLines(t *testing.T) {
	for _, args := range [][]string{{"--watch=100ms"}, {"--watch", "100ms", "-o", "json"}} {
		out, errs, _, err := runWatch(t, false, args...)
		want := `{"time":"2026-11-26T10:00:01Z","gpus":[{"index":0,"powerW":300,"energyCounterJ":1000,"energySinceStartJ":0,"gfxClockMHz":1980,"memClockMHz":2619,"temperatureC":45,"utilPercent":99,"memoryUsedBytes":1073741824,"throttle":""},{"index":3,"powerW":100,"energySinceStartJ":0,"memoryUsedBytes":0,"throttle":"power+thermal"}]}
{"time":"2026-11-26T10:00:02Z","gpus":[{"index":0,"powerW":310,"energyCounterJ":1300.5,"energySinceStartJ":300.5,"gfxClockMHz":1755,"memClockMHz":2619,"temperatureC":46,"utilPercent":100,"memoryUsedBytes":1073741824,"throttle":""},{"index":3,"error":"NVML: the GPU stopped answering: ERROR_GPU_IS_LOST (code 15)"}]}
`
		if err != nil || out != want || errs != watchStderr {
			t.Errorf("%v: err %v, stdout:\n%s\nwant:\n%s\nstderr:\n%s", args, err, out, want, errs)
		}
	}
	// Several nodes printing at once (srun -N 4): each line names its host.
	t.Setenv("SLURM_STEP_NUM_TASKS", "4")
	if out, _, _, _ := runWatch(t, false, "--watch", "100ms"); !strings.HasPrefix(out, `{"host":"gpu-01","time":"2026-11-26T10:00:01Z","gpus":[`) || strings.Count(out, `{"host":"gpu-01","time":`) != 2 {
		t.Errorf("SLURM_STEP_NUM_TASKS=4: %q", out)
	}
	t.Setenv("SLURM_STEP_NUM_TASKS", "")
	// On a terminal, -o json is JSON lines too.
	if out, _, _, _ := runWatch(t, true, "--watch", "100ms", "-o", "json"); !strings.HasPrefix(out, `{"time":`) {
		t.Errorf("-o json on a terminal: %q", out)
	}
}

// gpus --watch integrates energy by the rule a run's telemetry does: on the script every
// integrator is held to (gputest.EnergyScript), its last line says the same joules as
// runner's TestTelemetryEnergyIsTheWatchsEnergy.
func TestWatchEnergyIsTheTelemetrysEnergy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	script := gputest.EnergyScript()
	unavail := make([][]gpu.Unavailable, len(script)+1)
	fake := &fakeSampler{samples: script, unavail: unavail, cancel: cancel}
	for i := range unavail {
		unavail[i] = []gpu.Unavailable{}
	}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	var out, errb bytes.Buffer
	io := iostreams.New(strings.NewReader(""), &out, &errb)
	cmd := newGpusCmdDeps(io, commands.GPUsDeps{
		Detect: func(context.Context, gpu.Options) (gpu.Inventory, error) {
			return gpu.Inventory{Vendor: "nvidia", Source: "nvml", GPUs: []gpu.GPU{{Index: 0}}}, nil
		},
		Open:     func(context.Context, gpu.Options, gpu.Inventory) (gpu.Sampler, error) { return fake, nil },
		Now:      func() time.Time { at = at.Add(time.Second); return at },
		Lookup:   os.LookupEnv,
		Hostname: func() (string, error) { return "gpu-01", nil }}, nil)
	cmd.SetArgs([]string{"--watch", "100ms", "-o", "json"})
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(script) {
		t.Fatalf("%d lines for %d samples:\n%s", len(lines), len(script), out.String())
	}
	var last struct {
		GPUs []commands.WatchGPU `json:"gpus"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if len(last.GPUs) != 1 || last.GPUs[0].EnergySinceStartJ == nil || *last.GPUs[0].EnergySinceStartJ != gputest.EnergyScriptJ {
		t.Errorf("the last line: %s, want energySinceStartJ %v", lines[len(lines)-1], gputest.EnergyScriptJ)
	}
}

func TestGpusWatchInterval(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--watch", "99ms"}, `invalid --watch "99ms": shorter than the minimum interval, 100ms`},
		{[]string{"--watch=0"}, `invalid --watch "0": shorter than the minimum interval`},
		{[]string{"--watch", "soon"}, `invalid --watch "soon": not a duration`},
		{[]string{"--watch=-1s"}, `invalid --watch "-1s"`},
		{[]string{"200ms"}, `unexpected argument "200ms"`},
		{[]string{"--watch=2s", "3s"}, `unexpected argument "3s"`},
		{[]string{"--watch", "1s", "2s"}, `accepts at most 1 arg`},
	}
	for _, c := range cases {
		_, _, fake, err := runWatch(t, false, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || fake.n != 0 {
			t.Errorf("%v: %v (exit %d), %d samples; want %q", c.args, err, exitCode(err), fake.n, c.want)
		}
		if err != nil && !strings.Contains(c.want, "at most") && exitCode(err) != exitInvalid {
			t.Errorf("%v: exit %d, want %d", c.args, exitCode(err), exitInvalid)
		}
	}
	// A bare --watch is every second.
	out, _, _, err := runWatch(t, true, "--watch")
	if err != nil || !strings.Contains(out, "every 1s ") {
		t.Errorf("bare --watch: %v\n%s", err, out)
	}
}

// The real sampler over the recorded MI300X tree (hwmon), piped: whole JSON lines only,
// and the facts hwmon lacks said once however many samples there were.
func TestGpusWatchRecordedTree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 450*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := newGpusCmd(iostreams.New(strings.NewReader(""), &out, &errb), nil)
	cmd.SetArgs([]string{"--vendor", "amd", "--sysfs-root", gpuFixtures + "mi300x", "--watch", "100ms"})
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) < 2 || !strings.HasSuffix(out.String(), "\n") {
		t.Fatalf("stdout %q", out.String())
	}
	for _, l := range lines {
		var v struct {
			Time string
			GPUs []map[string]any
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || len(v.GPUs) != 8 || v.GPUs[2]["powerW"] != 712.0 {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	if n := strings.Count(errb.String(), "\n"); n != 1+8*2 || !strings.HasPrefix(errb.String(), "telemetry: amdsmi not used: a recorded sysfs tree is read\n") {
		t.Errorf("stderr (%d lines):\n%s", n, errb.String())
	}
}
