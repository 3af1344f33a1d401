package commands

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
	now     func() time.Time // the clock; tests replace it
	log     *slog.Logger     // where the log lines go (not a TTY, and build steps)
	started map[string]time.Time
	logged  map[string]time.Time
	drawn   bool
	quiet   bool // -q or a log level above info: nothing is shown
}

// newProgressPrinter prints to w, a redrawn bar when tty (see streams.CanRedrawStderr).
// Progress is information: it is shown only when info lines are (not with -q/--quiet or
// --log-level warn or error).
func newProgressPrinter(w io.Writer, tty bool) *progressPrinter {
	return &progressPrinter{w: w, tty: tty, every: 5 * time.Second, now: time.Now, log: slog.Default(),
		started: map[string]time.Time{}, logged: map[string]time.Time{}, quiet: !infoShown()}
}

func (p *progressPrinter) Func() image.ProgressFunc { return p.report }

func (p *progressPrinter) report(ev image.Progress) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Step != "" {
		p.clearBar()
		switch {
		case ev.Phase == "wait":
			p.log.Info(ev.Step)
		case p.tty:
			fmt.Fprintln(p.w, ev.Step)
		case strings.HasPrefix(ev.Step, "Step ") || strings.HasPrefix(ev.Step, "#"):
			p.log.Info("build", "step", ev.Step)
		default:
			p.log.Debug("build", "output", ev.Step)
		}
		return
	}
	now := p.now()
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
		eta = etaString(float64(ev.Total-ev.Done) / rate)
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
		p.log.Info(ev.Phase, args...)
	}
	if ev.Final { // the next transfer of this phase starts its own clock
		delete(p.started, ev.Phase)
		delete(p.logged, ev.Phase)
	}
}

// etaString is secs seconds to go, to the second ("1m5s"); "" past 100 hours, where an
// estimate says nothing (and a Duration could overflow).
func etaString(secs float64) string {
	if secs > (100 * time.Hour).Seconds() {
		return ""
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second).String()
}

func (p *progressPrinter) drawBar(ev image.Progress, rate float64, eta string) {
	const width = 30
	line := fmt.Sprintf("%-7s ", ev.Phase)
	if ev.Total > 0 {
		n := int(float64(width) * float64(min(ev.Done, ev.Total)) / float64(ev.Total))
		line += "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "] "
	}
	line += humanBytes(ev.Done)
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
