package telemetry

import (
	"bufio"
	"encoding/json"
	"github.com/benchctl/benchctl/internal/mean"
	"io"
	"math"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
)

// series folds one run's samples into the rows of its telemetry file (bounded: see
// jobdir.TelemetryLevelRows and MaxTelemetrySeriesSize) and sums them up for its summary.
// It is used from one goroutine.
type series struct {
	w        *bufio.Writer
	size     int64 // bytes written so far
	limit    int64
	stopped  bool
	err      error // the first write error: rows stop, the summary is still made
	start    time.Time
	interval time.Duration
	gpus     []*gpuTrack
	byIndex  map[int]*gpuTrack
	sum      jobdir.TelemetrySummary
	said     map[noteKey]bool
}

type noteKey struct {
	gpu   int
	field string
}

// gpuTrack is one GPU's open row, its resolution level, its energy and its totals.
type gpuTrack struct {
	info  jobdir.TelemetryGPU
	level int // rows stand for 2^level samples
	rows  int // rows written at this level
	b     bucket

	energy gpu.Energy // the one rule, shared with gpus --watch

	st jobdir.TelemetryGPUStat
	// running sums for the summary
	power, gfx, mem, util mean.Mean
	peak, minGFX, maxTemp *float64
	maxMem                *uint64
	reasons               gpu.Throttle
}

// bucket is a row being filled.
type bucket struct {
	n, unanswered, throttled, known int
	t0, t1                          float64
	power, gfx, mem, temp, util     mean.Mean
	maxPower, minGFX, maxTemp       *float64
	maxMem                          *uint64
	reasons                         gpu.Throttle
	err                             string
}

func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func maxOf(p *float64, v float64) *float64 {
	if p == nil || v > *p {
		return &v
	}
	return p
}

func minOf(p *float64, v float64) *float64 {
	if p == nil || v < *p {
		return &v
	}
	return p
}

// newSeries starts a series for gpus and writes its header to w.
func newSeries(w io.Writer, run, source string, interval time.Duration, start time.Time, gpus []gpu.GPU, limit int64) *series {
	s := &series{w: bufio.NewWriterSize(w, 32<<10), limit: limit, start: start, interval: interval,
		byIndex: map[int]*gpuTrack{}, said: map[noteKey]bool{}}
	h := jobdir.TelemetryHeader{Telemetry: jobdir.TelemetryVersion, Run: run, Source: source,
		Interval: interval.String(), Start: start, GPUs: []jobdir.TelemetryGPU{}}
	for _, g := range gpus {
		t := &gpuTrack{info: jobdir.TelemetryGPU{Index: g.Index, UUID: g.UUID, Name: g.Name}}
		t.st.TelemetryGPU = t.info
		s.gpus = append(s.gpus, t)
		s.byIndex[g.Index] = t
		h.GPUs = append(h.GPUs, t.info)
	}
	s.sum = jobdir.TelemetrySummary{Telemetry: jobdir.TelemetryVersion, Run: run, Source: source,
		Interval: interval.String(), Start: start, End: start, Unavailable: []jobdir.TelemetryNote{}, GPUs: []jobdir.TelemetryGPUStat{}}
	s.line(h)
	return s
}

// line writes one JSON line unless the series has stopped; the line that would pass the
// size limit stops it instead, with a last line saying so.
func (s *series) line(v any) {
	if s.stopped || s.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	b = append(b, '\n')
	if s.size+int64(len(b)) > s.limit-64 {
		s.stopped = true
		b, _ = json.Marshal(jobdir.TelemetryRow{Stopped: true, T: s.sum.End.Sub(s.start).Seconds()})
		b = append(b, '\n')
	} else if _, isRow := v.(jobdir.TelemetryRow); isRow {
		s.sum.Rows++
	}
	n, err := s.w.Write(b)
	s.size += int64(n)
	if err != nil {
		s.err = err
	}
}

// note records a fact that cannot be sampled, once per GPU and field.
func (s *series) note(u gpu.Unavailable) {
	k := noteKey{u.GPU, u.Field}
	if s.said[k] {
		return
	}
	s.said[k] = true
	n := jobdir.TelemetryNote{GPU: u.GPU, Field: u.Field, Why: u.Why}
	s.sum.Unavailable = append(s.sum.Unavailable, n)
	s.line(jobdir.TelemetryRow{GPU: u.GPU, Note: u.Why, Field: u.Field, T: s.sum.End.Sub(s.start).Seconds()})
}

// add folds one sampling round, read at at, into the series. Readings of GPUs the series
// does not track are ignored.
func (s *series) add(at time.Time, rs []gpu.Reading) {
	s.sum.Samples++
	s.sum.End = at
	t := at.Sub(s.start).Seconds()
	for _, r := range rs {
		g := s.byIndex[r.Index]
		if g == nil {
			continue
		}
		s.fold(g, t, r)
		if g.b.n+g.b.unanswered >= 1<<g.level {
			s.flush(g)
		}
	}
}

func (s *series) fold(g *gpuTrack, t float64, r gpu.Reading) {
	b := &g.b
	if b.n+b.unanswered == 0 {
		b.t0 = t
	}
	b.t1 = t
	if r.Err != nil {
		b.unanswered++
		b.err = r.Err.Error()
		g.st.Unanswered++
		// The interval over the silence has no energy known; start again after it.
		g.energy.Break()
		return
	}
	b.n++
	g.st.Samples++
	if jumped := g.energy.Add(t, r); jumped != "" {
		s.note(gpu.Unavailable{GPU: g.info.Index, Field: "energyCounter", Why: jumped})
	}
	if r.PowerW != nil {
		b.power.Add(*r.PowerW)
		b.maxPower = maxOf(b.maxPower, *r.PowerW)
		g.power.Add(*r.PowerW)
		g.peak = maxOf(g.peak, *r.PowerW)
	}
	if r.GFXClockMHz != nil {
		v := float64(*r.GFXClockMHz)
		b.gfx.Add(v)
		b.minGFX = minOf(b.minGFX, v)
		g.gfx.Add(v)
		g.minGFX = minOf(g.minGFX, v)
	}
	if r.MemClockMHz != nil {
		b.mem.Add(float64(*r.MemClockMHz))
		g.mem.Add(float64(*r.MemClockMHz))
	}
	if r.TemperatureC != nil {
		b.temp.Add(*r.TemperatureC)
		b.maxTemp = maxOf(b.maxTemp, *r.TemperatureC)
		g.maxTemp = maxOf(g.maxTemp, *r.TemperatureC)
	}
	if r.UtilPercent != nil {
		b.util.Add(*r.UtilPercent)
		g.util.Add(*r.UtilPercent)
	}
	if m := r.MemoryUsedBytes; m != nil {
		if b.maxMem == nil || *m > *b.maxMem {
			b.maxMem = copyOf(m)
		}
		if g.maxMem == nil || *m > *g.maxMem {
			g.maxMem = copyOf(m)
		}
	}
	if r.ThrottleKnown {
		b.known++
		g.st.ThrottleKnown++
		b.reasons |= r.Throttle
		g.reasons |= r.Throttle
		if r.Throttle.Limiting() {
			b.throttled++
			g.st.Throttled++
		}
	}
}

// flush writes g's open row and moves to the next level when this one is full.
func (s *series) flush(g *gpuTrack) {
	b := &g.b
	if b.n+b.unanswered == 0 {
		return
	}
	row := jobdir.TelemetryRow{T: round3(b.t0), DT: round3(b.t1 - b.t0 + s.interval.Seconds()), GPU: g.info.Index, N: b.n,
		PowerW: round(b.power.Value()), MaxPowerW: round(b.maxPower), GFXMHz: round(b.gfx.Value()), MinGFXMHz: round(b.minGFX),
		MemMHz: round(b.mem.Value()), TempC: round(b.temp.Value()), MaxTempC: round(b.maxTemp), UtilPct: round(b.util.Value()),
		MemUsed: b.maxMem, Throttled: b.throttled, Throttle: b.known, Reasons: b.reasons.String(),
		Error: b.err, Unanswered: b.unanswered, Level: g.level}
	if g.energy.FromCounter || g.energy.FromPower {
		e := g.energy.J
		row.EnergyJ = round(&e)
	}
	s.line(row)
	g.b = bucket{}
	g.rows++
	if g.rows >= jobdir.TelemetryLevelRows {
		g.level, g.rows = g.level+1, 0
	}
}

// finish writes the open rows, flushes the file and returns the summary.
func (s *series) finish(end time.Time) (*jobdir.TelemetrySummary, error) {
	if end.After(s.sum.End) {
		s.sum.End = end
	}
	for _, g := range s.gpus {
		s.flush(g)
		st := g.st
		st.AvgPowerW, st.PeakPowerW = round(g.power.Value()), round(g.peak)
		st.AvgGFXMHz, st.MinGFXMHz, st.AvgMemMHz = round(g.gfx.Value()), round(g.minGFX), round(g.mem.Value())
		st.MaxTempC, st.AvgUtilPct, st.MaxMemUsed = round(g.maxTemp), round(g.util.Value()), g.maxMem
		st.Reasons = g.reasons.String()
		switch {
		case g.energy.FromCounter && g.energy.FromPower:
			st.EnergyFrom = "counter+power"
		case g.energy.FromCounter:
			st.EnergyFrom = "counter"
		case g.energy.FromPower:
			st.EnergyFrom = "power"
		}
		if st.EnergyFrom != "" {
			e := g.energy.J
			st.EnergyJ = round(&e)
		}
		s.sum.GPUs = append(s.sum.GPUs, st)
	}
	s.sum.Stopped = s.stopped
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	return &s.sum, s.err
}

// round keeps three decimals: the series is read by people and charts, not re-integrated.
func round(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := round3(*p)
	return &v
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
