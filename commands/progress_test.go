package commands

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image"
)

// feed reports steps to a printer whose clock reads each step's time, and whose log lines
// (without their time) go to log.
func feed(w *bytes.Buffer, log *bytes.Buffer, tty bool, steps []step) {
	p := newProgressPrinter(w, tty)
	p.quiet = false // what it shows, whatever level an earlier test left the default logger at
	feedTo(p, log, steps)
}

// feedTo is feed to a printer made by the caller.
func feedTo(p *progressPrinter, log *bytes.Buffer, steps []step) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var now time.Time
	p.now = func() time.Time { return now }
	p.log = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}))
	report := p.Func()
	for _, s := range steps {
		now = t0.Add(s.at)
		report(s.ev)
	}
}

// On a terminal: one line redrawn in place, with the rate and the time to go; a build step
// clears it; the final report ends the line; each transfer starts its own clock.
func TestProgressTTY(t *testing.T) {
	load := func(done int64, final bool) image.Progress {
		return image.Progress{Phase: "load", Done: done, Total: 100 * mib, Final: final}
	}
	var w, log bytes.Buffer
	feed(&w, &log, true, []step{
		{0, load(0, false)},
		{2 * time.Second, load(20*mib, false)},
		{4 * time.Second, load(30*mib, false)},
		{5 * time.Second, image.Progress{Phase: "load", Step: "Loaded layer sha256:abc"}},
		{64 * time.Second, load(40*mib, false)},
		{100 * time.Second, load(100*mib, true)},
		{100 * time.Second, image.Progress{Phase: "export"}},
		{102 * time.Second, image.Progress{Phase: "export", Done: 4 * mib, Final: true}},
		{200 * time.Second, image.Progress{Phase: "load", Total: 10 * mib}},
		{201 * time.Second, image.Progress{Phase: "load", Done: 5 * mib, Total: 10 * mib}},
		{202 * time.Second, image.Progress{Phase: "load", Done: 10 * mib, Total: 10 * mib, Final: true}},
	})
	const cr = "\r\033[K"
	want := cr + "load    [                              ] 0 B / 100.0 MiB  0 B/s" +
		cr + "load    [======                        ] 20.0 MiB / 100.0 MiB  10.0 MiB/s  ETA 8s" +
		cr + "load    [=========                     ] 30.0 MiB / 100.0 MiB  7.5 MiB/s  ETA 9s" +
		cr + "Loaded layer sha256:abc\n" +
		cr + "load    [============                  ] 40.0 MiB / 100.0 MiB  640.0 KiB/s  ETA 1m36s" +
		cr + "load    [==============================] 100.0 MiB / 100.0 MiB  1.0 MiB/s\n" +
		cr + "export  0 B  0 B/s" +
		cr + "export  4.0 MiB  2.0 MiB/s\n" +
		cr + "load    [                              ] 0 B / 10.0 MiB  0 B/s" +
		cr + "load    [===============               ] 5.0 MiB / 10.0 MiB  5.0 MiB/s  ETA 1s" +
		cr + "load    [==============================] 10.0 MiB / 10.0 MiB  5.0 MiB/s\n"
	if got := w.String(); got != want {
		t.Errorf("terminal output:\n got %q\nwant %q", got, want)
	}
	if log.Len() != 0 {
		t.Errorf("logged on a terminal: %q", log.String())
	}
}

// Not a terminal (sbatch): no bar and no escape sequences, a log line at most every 5 s and
// one at the end, with the time to go; build steps as log lines, other builder output at
// debug level.
func TestProgressNotTTY(t *testing.T) {
	load := func(done int64, final bool) image.Progress {
		return image.Progress{Phase: "load", Done: done, Total: 100 * mib, Final: final}
	}
	var w, log bytes.Buffer
	feed(&w, &log, false, []step{
		{0, image.Progress{Phase: "wait", Step: "waiting for rank 0 to release the image"}},
		{0, image.Progress{Phase: "build", Step: "Step 1/2 : FROM busybox"}},
		{0, image.Progress{Phase: "build", Step: "#5 [2/2] RUN true"}},
		{0, image.Progress{Phase: "build", Step: " ---> Running in 1234"}},
		{0, load(0, false)},
		{2 * time.Second, load(20*mib, false)},
		{5 * time.Second, load(50*mib, false)},
		{7 * time.Second, load(60*mib, false)},
		{10 * time.Second, load(70*mib, false)},
		{12 * time.Second, load(100*mib, true)},
		{20 * time.Second, image.Progress{Phase: "export"}},
		{22 * time.Second, image.Progress{Phase: "export", Done: 4 * mib, Final: true}},
	})
	want := strings.Join([]string{
		`level=INFO msg="waiting for rank 0 to release the image"`,
		`level=INFO msg=build step="Step 1/2 : FROM busybox"`,
		`level=INFO msg=build step="#5 [2/2] RUN true"`,
		`level=INFO msg=load done="50.0 MiB" rate="10.0 MiB/s" total="100.0 MiB" eta=5s`,
		`level=INFO msg=load done="70.0 MiB" rate="7.0 MiB/s" total="100.0 MiB" eta=4s`,
		`level=INFO msg=load done="100.0 MiB" rate="8.3 MiB/s" total="100.0 MiB" elapsed=12s`,
		`level=INFO msg=export done="4.0 MiB" rate="2.0 MiB/s" elapsed=2s`,
	}, "\n") + "\n"
	if got := log.String(); got != want {
		t.Errorf("log lines:\n got %s\nwant %s", got, want)
	}
	if w.Len() != 0 {
		t.Errorf("drew on a stream that is not a terminal: %q", w.String())
	}
}

func TestETAString(t *testing.T) {
	for secs, want := range map[float64]string{0.2: "0s", 8: "8s", 9.4: "9s", 96: "1m36s", 3600 * 7.5: "7h30m0s", 1e12: ""} {
		if got := etaString(secs); got != want {
			t.Errorf("etaString(%v) = %q, want %q", secs, got, want)
		}
	}
}

const mib = 1 << 20

// step is one progress report at a second of a fake clock.
type step struct {
	at time.Duration
	ev image.Progress
}
