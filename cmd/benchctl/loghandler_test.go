package main

import (
	"bytes"
	"log/slog"
	"testing"
)

// A terminal's short log line shows a message's control characters escaped: a message can
// quote a Dockerfile line, a catalog key or an error a container wrote.
func TestCompactHandlerEscapesTheMessage(t *testing.T) {
	var out bytes.Buffer
	slog.New(newCompactHandler(&out, &slog.HandlerOptions{})).Info("\x1b[2J\nwiped", "k", "v")
	if want := "INFO  \\x1b[2J\\nwiped k=v\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
