package main

import (
	"github.com/benchctl/benchctl/internal/textsafe"

	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// compactHandler writes the short log lines a person reads on a terminal: the level, the
// message and the attributes, no timestamp —
//
//	INFO  building manifest=allreduce builder=docker
//
// Attributes are formatted as slog's text handler formats them (quoted when they need it);
// records whose level is below the handler's are dropped. In a pipe or with --log-format json
// the full records (with time) are written instead: see setupLogging.
type compactHandler struct {
	out   io.Writer
	inner slog.Handler // writes the attributes alone into *buf
	mu    *sync.Mutex  // guards buf and out, shared by the handlers WithAttrs and WithGroup make
	buf   *bytes.Buffer
}

func newCompactHandler(out io.Writer, opts *slog.HandlerOptions) *compactHandler {
	buf := &bytes.Buffer{}
	o := slog.HandlerOptions{Level: opts.Level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{} // written by Handle
		}
		return a
	}}
	return &compactHandler{out: out, inner: slog.NewTextHandler(buf, &o), mu: &sync.Mutex{}, buf: buf}
}

func (h *compactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *compactHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Reset()
	if err := h.inner.Handle(ctx, r); err != nil {
		return err
	}
	var line strings.Builder
	level := r.Level.String()
	line.WriteString(level)
	line.WriteString(strings.Repeat(" ", max(1, 6-len(level))))
	line.WriteString(textsafe.Line(r.Message)) // a message can quote a Dockerfile, a catalog, an error: data, not terminal codes
	if attrs := strings.TrimSpace(h.buf.String()); attrs != "" {
		line.WriteString(" " + attrs)
	}
	line.WriteString("\n")
	_, err := io.WriteString(h.out, line.String())
	return err
}

func (h *compactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &compactHandler{out: h.out, inner: h.inner.WithAttrs(attrs), mu: h.mu, buf: h.buf}
}

func (h *compactHandler) WithGroup(name string) slog.Handler {
	return &compactHandler{out: h.out, inner: h.inner.WithGroup(name), mu: h.mu, buf: h.buf}
}
