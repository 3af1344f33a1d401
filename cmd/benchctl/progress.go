package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/benchctl/benchctl/manifest"

	"github.com/benchctl/benchctl/image"
)

// progressPrinter shows image.Progress: a redrawn bar on a terminal, and otherwise a log
// line every few seconds (plus one at the end), so sbatch logs stay readable.
type progressPrinter struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	every   time.Duration
	started map[string]time.Time
	logged  map[string]time.Time
	drawn   bool
}

func newProgressPrinter(w io.Writer, tty bool) *progressPrinter {
	return &progressPrinter{w: w, tty: tty, every: 5 * time.Second, started: map[string]time.Time{}, logged: map[string]time.Time{}}
}

func (p *progressPrinter) Func() image.ProgressFunc { return p.report }

func (p *progressPrinter) report(ev image.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Step != "" {
		p.clearBar()
		switch {
		case ev.Phase == "wait":
			slog.Info(ev.Step)
		case p.tty:
			fmt.Fprintln(p.w, ev.Step)
		case strings.HasPrefix(ev.Step, "Step ") || strings.HasPrefix(ev.Step, "#"):
			slog.Info("build", "step", ev.Step)
		default:
			slog.Debug("build", "output", ev.Step)
		}
		return
	}
	now := time.Now()
	if _, ok := p.started[ev.Phase]; !ok {
		p.started[ev.Phase] = now
		p.logged[ev.Phase] = now
	}
	elapsed := now.Sub(p.started[ev.Phase])
	rate := 0.0
	if elapsed > 0 {
		rate = float64(ev.Done) / elapsed.Seconds()
	}
	eta := ""
	if ev.Total > 0 && rate > 0 && ev.Done < ev.Total {
		eta = (time.Duration(float64(ev.Total-ev.Done)/rate) * time.Second / time.Second).Round(time.Second).String()
	}
	if p.tty {
		p.drawBar(ev, rate, eta)
		if ev.Final {
			fmt.Fprintln(p.w)
			p.drawn = false
			delete(p.started, ev.Phase)
			delete(p.logged, ev.Phase)
		}
		return
	}
	if ev.Final || now.Sub(p.logged[ev.Phase]) >= p.every {
		p.logged[ev.Phase] = now
		args := []any{"done", humanBytes(ev.Done), "rate", humanBytes(int64(rate)) + "/s"}
		if ev.Total > 0 {
			args = append(args, "total", humanBytes(ev.Total))
		}
		if eta != "" {
			args = append(args, "eta", eta)
		}
		if ev.Final {
			args = append(args, "elapsed", elapsed.Round(time.Millisecond).String())
		}
		slog.Info(ev.Phase, args...)
	}
	if ev.Final { // the next transfer of this phase starts its own clock
		delete(p.started, ev.Phase)
		delete(p.logged, ev.Phase)
	}
}

func (p *progressPrinter) drawBar(ev image.Progress, rate float64, eta string) {
	const width = 30
	bar := strings.Repeat("?", 0)
	if ev.Total > 0 {
		n := int(float64(width) * float64(min(ev.Done, ev.Total)) / float64(ev.Total))
		bar = "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]"
	}
	line := fmt.Sprintf("%-7s %s %s", ev.Phase, bar, humanBytes(ev.Done))
	if ev.Total > 0 {
		line += " / " + humanBytes(ev.Total)
	}
	line += fmt.Sprintf("  %s/s", humanBytes(int64(rate)))
	if eta != "" {
		line += "  ETA " + eta
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.drawn = true
}

func (p *progressPrinter) clearBar() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func humanBytes(n int64) string { return manifest.FormatBytes(n) }
