package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// minWatch is the shortest --watch interval: below it the sampler's own cost grows past
// what docs/PERFORMANCE.md allows, and the GPUs' own counters update no faster.
const minWatch = 100 * time.Millisecond

// openSampler is gpu.OpenSampler; tests pass a fake.
type openSampler func(context.Context, gpu.Options, gpu.Inventory) (gpu.Sampler, error)

// ParseWatch reads --watch's interval (a Go duration: 1s, 200ms).
func ParseWatch(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, exitcode.Usagef("give a duration such as 1s or 200ms", "invalid --watch %q: not a duration", v)
	case d < minWatch:
		return 0, exitcode.Usagef("give 100ms or more", "invalid --watch %q: shorter than the minimum interval, %s", v, minWatch)
	}
	return d, nil
}

// gpusWatch samples the inventory's GPUs every opts.interval until ctx ends, printing a
// table redrawn in place on a terminal (unless -o json), else one JSON line per sample.
// Facts the source cannot give are said once on stderr. Cancelling ctx (Ctrl-C) ends it
// with no error and no partial line: each sample is written whole, or not at all. host,
// when not "" (several nodes print at once), names the node in each JSON line.
func gpusWatch(ctx context.Context, io iostreams.Streams, inv gpu.Inventory, open openSampler, now func() time.Time, opts *GPUsOptions, host string) error {
	smp, err := open(ctx, gpu.Options{Vendor: opts.Vendor, SysfsRoot: opts.SysfsRoot, AMDSource: opts.Source}, inv)
	if err != nil {
		return fmt.Errorf("gpus --watch: %w", err)
	}
	defer smp.Close()
	table := io.IsStdoutTTY() && opts.Output != "json"
	energy := map[int]*energySince{}
	// The sampling loop is a run's telemetry's (gpu.Loop); a round cut by Ctrl-C prints
	// nothing.
	return gpu.Loop(ctx, smp, opts.Interval, now, func(rd gpu.Round) error {
		if rd.Cut {
			return nil
		}
		for _, r := range rd.Readings {
			e := energy[r.Index]
			if e == nil {
				e = &energySince{}
				energy[r.Index] = e
			}
			e.add(r, rd.At)
		}
		for _, u := range rd.Unavailable {
			fmt.Fprintln(io.ErrOut(), unavailableLine(u))
		}
		var b bytes.Buffer
		if table {
			writeWatchTable(&b, smp.Source(), opts.Interval, rd.At, rd.Readings, energy)
		} else if err := writeWatchLine(&b, host, rd.At, rd.Readings, energy); err != nil {
			return err
		}
		_, err := io.Out().Write(b.Bytes())
		return err
	})
}

func unavailableLine(u gpu.Unavailable) string {
	if u.GPU < 0 {
		return "telemetry: " + u.Why
	}
	return fmt.Sprintf("telemetry: GPU %d: %s unavailable: %s", u.GPU, u.Field, u.Why)
}

// energySince is a GPU's energy since the first sample, by the rule a run's telemetry
// integrates with (gpu.Energy): the device's counter where it rose plausibly, else power
// integrated over time (trapezoids).
type energySince struct {
	e       gpu.Energy
	started bool
	origin  time.Time
}

func (e *energySince) add(r gpu.Reading, at time.Time) {
	if !e.started {
		e.origin = at
	}
	e.e.Add(at.Sub(e.origin).Seconds(), r)
	e.started = e.started || r.Err == nil
}

// joules is the energy so far; measured whether the latest sample had the device's counter.
func (e *energySince) joules() float64 { return e.e.J }

func (e *energySince) measured() bool { return e.e.Measured() }

// WatchGPU is one GPU in a JSON line. Facts the source did not give are left out.
type WatchGPU struct {
	Index             int      `json:"index"`
	PowerW            *float64 `json:"powerW,omitempty"`
	EnergyCounterJ    *float64 `json:"energyCounterJ,omitempty"` // the device's counter, raw
	EnergySinceStartJ *float64 `json:"energySinceStartJ,omitempty"`
	GFXClockMHz       *uint32  `json:"gfxClockMHz,omitempty"`
	MemClockMHz       *uint32  `json:"memClockMHz,omitempty"`
	TemperatureC      *float64 `json:"temperatureC,omitempty"`
	UtilPercent       *float64 `json:"utilPercent,omitempty"`
	MemoryUsedBytes   *uint64  `json:"memoryUsedBytes,omitempty"`
	Throttle          *string  `json:"throttle,omitempty"` // "" for none; left out when the source does not say
	Error             string   `json:"error,omitempty"`
}

func writeWatchLine(b *bytes.Buffer, host string, at time.Time, rs []gpu.Reading, energy map[int]*energySince) error {
	line := struct {
		Host string     `json:"host,omitempty"`
		Time string     `json:"time"`
		GPUs []WatchGPU `json:"gpus"`
	}{Host: host, Time: at.UTC().Format(time.RFC3339Nano), GPUs: []WatchGPU{}}
	for _, r := range rs {
		g := WatchGPU{Index: r.Index, PowerW: r.PowerW, EnergyCounterJ: r.EnergyJ, GFXClockMHz: r.GFXClockMHz, MemClockMHz: r.MemClockMHz,
			TemperatureC: r.TemperatureC, UtilPercent: r.UtilPercent, MemoryUsedBytes: r.MemoryUsedBytes}
		if e := energy[r.Index]; e != nil && e.started && r.Err == nil {
			j := e.joules()
			g.EnergySinceStartJ = &j
		}
		if r.ThrottleKnown {
			s := r.Throttle.String()
			g.Throttle = &s
		}
		if r.Err != nil {
			g.Error = r.Err.Error()
		}
		line.GPUs = append(line.GPUs, g)
	}
	return json.NewEncoder(b).Encode(line)
}

// writeWatchTable is the terminal's view: the cursor home, the screen cleared, a header
// and one row per GPU.
func writeWatchTable(b *bytes.Buffer, source string, every time.Duration, at time.Time, rs []gpu.Reading, energy map[int]*energySince) {
	b.WriteString("\033[H\033[2J")
	fmt.Fprintf(b, "%s  every %s  source %s  (Ctrl-C to stop)\n", at.Format("15:04:05"), every, source)
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tPOWER\tENERGY\tGFX\tMEM\tTEMP\tUTIL\tMEM USED\tTHROTTLE")
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(tw, "%d\t%s\n", r.Index, r.Err)
			continue
		}
		e := "-"
		if s := energy[r.Index]; s != nil && s.started && (s.measured() || r.PowerW != nil) {
			e = fmt.Sprintf("%.1f J", s.joules())
			if !s.measured() {
				e = "~" + e // integrated from power
			}
		}
		throttle := "-"
		if r.ThrottleKnown {
			throttle = r.Throttle.String()
			if throttle == "" {
				throttle = "none"
			}
		}
		used := "-"
		if r.MemoryUsedBytes != nil {
			used = memory(*r.MemoryUsedBytes)
			if *r.MemoryUsedBytes == 0 {
				used = "0"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, num(r.PowerW, "%.1f W"), e, unum(r.GFXClockMHz, "%d MHz"),
			unum(r.MemClockMHz, "%d MHz"), num(r.TemperatureC, "%.0f °C"), num(r.UtilPercent, "%.0f %%"), used, throttle)
	}
	tw.Flush()
}

func num(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func unum(v *uint32, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}
