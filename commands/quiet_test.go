package commands

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image"
)

// With -q (the log level error) a terminal's progress shows no bar and no build steps.
func TestQuietProgress(t *testing.T) {
	old := slog.Default()
	t.Cleanup(func() { slog.SetDefault(old) })
	slog.SetDefault(slog.New(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelError})))
	for _, tty := range []bool{true, false} {
		var w, log bytes.Buffer
		feedTo(newProgressPrinter(&w, tty), &log, []step{
			{0, image.Progress{Phase: "load", Total: 10 * mib}},
			{time.Second, image.Progress{Phase: "build", Step: "Step 1/2 : FROM scratch"}},
			{2 * time.Second, image.Progress{Phase: "load", Done: 10 * mib, Total: 10 * mib, Final: true}},
		})
		if w.Len() != 0 || log.Len() != 0 {
			t.Errorf("tty %v: printed %q, logged %q", tty, w.String(), log.String())
		}
	}
}
