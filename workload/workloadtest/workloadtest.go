// Package workloadtest is the conformance suite every runtime of benchctl passes (a
// runtime is where a benchmark's process lives: workload.Runtime). Its subtests are the
// contract runner, cleanup and diagnostics rely on: a process's exit code and output, a
// stop that ends a process deaf to SIGTERM, lists by labels, inspect and top of a running
// process, a command run beside it with its streams and exit code, and what a process that
// is gone answers. Each runtime's tests run it against the real thing (the testbed's Docker
// and Podman engines in tests/).
package workloadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/workload"
)

// Harness is one runtime under test.
type Harness struct {
	Runtime workload.Runtime
	// Image is what the processes run in: a POSIX sh, sleep, cat and trap at /bin (""
	// for a runtime without images, whose processes run on the node).
	Image string
	// Deadline bounds each subtest: a runtime that never answers fails, it does not hang.
	// Two minutes when zero.
	Deadline time.Duration
	// Adapt, when set, changes each process's spec as a run on this node would (a Podman
	// engine's limits and network: see runner/podman).
	Adapt func(*workload.Spec)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Deadline <= 0 {
		h.Deadline = 2 * time.Minute
	}
	label := "io.benchctl.conformance"
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	run := hex.EncodeToString(b)
	n := 0
	spec := func(argv ...string) workload.Spec {
		n++
		s := workload.Spec{Name: fmt.Sprintf("benchctl-conformance-%s-%d", run, n), Image: h.Image, Command: argv,
			Labels: map[string]string{label: run}}
		if h.Adapt != nil {
			h.Adapt(&s)
		}
		return s
	}
	ctxOf := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
		t.Cleanup(cancel)
		return ctx
	}
	// started creates and starts a process, removed when the subtest ends; Wait is asked
	// before Start, as the contract says.
	started := func(t *testing.T, ctx context.Context, s workload.Spec) (string, <-chan workload.Exit) {
		t.Helper()
		id, err := h.Runtime.Create(ctx, s)
		if err != nil {
			t.Fatalf("create %v: %v", s.Command, err)
		}
		t.Cleanup(func() {
			rctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
			defer cancel()
			_ = h.Runtime.Remove(rctx, id)
		})
		exit := h.Runtime.Wait(ctx, id)
		if err := h.Runtime.Start(ctx, id); err != nil {
			t.Fatalf("start %v: %v", s.Command, err)
		}
		return id, exit
	}

	t.Run("ExitCodeAndOutput", func(t *testing.T) {
		ctx := ctxOf(t)
		id, exit := started(t, ctx, spec("sh", "-c", "echo out; echo err >&2; exit 7"))
		var logs bytes.Buffer
		if err := h.Runtime.Logs(ctx, id, &logs); err != nil {
			t.Fatalf("logs: %v", err)
		}
		if e := <-exit; e.Err != nil || e.Code != 7 {
			t.Fatalf("exit %+v, want code 7", e)
		}
		if got := logs.String(); !strings.Contains(got, "out\n") || !strings.Contains(got, "err\n") {
			t.Fatalf("logs %q, want out and err", got)
		}
	})

	t.Run("StopKillsAProcessDeafToSIGTERM", func(t *testing.T) {
		ctx := ctxOf(t)
		// the trap is set before "ready" is printed: a SIGTERM after it is ignored
		id, exit := started(t, ctx, spec("sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"))
		waitForLog(t, ctx, h.Runtime, id, "ready")
		if err := h.Runtime.Stop(ctx, id, time.Second); err != nil {
			t.Fatalf("stop: %v", err)
		}
		select {
		case e := <-exit:
			if e.Err != nil || e.Code == 0 {
				t.Fatalf("a killed process ended %+v", e)
			}
		case <-ctx.Done():
			t.Fatal("the process did not end after Stop's grace")
		}
	})

	t.Run("ListByLabels", func(t *testing.T) {
		ctx := ctxOf(t)
		own := spec("sleep", "600")
		own.Labels[label+".list"] = "mine"
		id, _ := started(t, ctx, own)
		other := spec("sleep", "600")
		other.Labels[label+".list"] = "other"
		started(t, ctx, other)
		ps, err := h.Runtime.List(ctx, map[string]string{label: run, label + ".list": "mine"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || ps[0].ID != id || ps[0].Labels[label+".list"] != "mine" {
			t.Fatalf("list found %+v, want only %s", ps, id)
		}
		if ps, err := h.Runtime.List(ctx, map[string]string{label: run + "-none"}); err != nil || len(ps) != 0 {
			t.Fatalf("a label no process has found %+v, %v", ps, err)
		}
	})

	t.Run("InspectAndTopOfARunningProcess", func(t *testing.T) {
		ctx := ctxOf(t)
		id, _ := started(t, ctx, spec("sleep", "600"))
		st, err := h.Runtime.Inspect(ctx, id)
		if err != nil || !st.Running {
			t.Fatalf("inspect: %+v, %v", st, err)
		}
		top, err := h.Runtime.Top(ctx, id)
		if err != nil || len(top.Processes) == 0 || !strings.Contains(strings.Join(flatten(top.Processes), " "), "sleep") {
			t.Fatalf("top: %+v, %v", top, err)
		}
	})

	t.Run("ExecBeside", func(t *testing.T) {
		ctx := ctxOf(t)
		id, _ := started(t, ctx, spec("sleep", "600"))
		var out, errb bytes.Buffer
		code, err := h.Runtime.Exec(ctx, id, workload.Command{Argv: []string{"sh", "-c", `cat; echo "$BESIDE" >&2; exit 3`},
			Env: []string{"BESIDE=yes"}, Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
		if err != nil || code != 3 || out.String() != "hello\n" || errb.String() != "yes\n" {
			t.Fatalf("exec: code %d, %v, stdout %q, stderr %q", code, err, out.String(), errb.String())
		}
		// a large output arrives whole, in order
		out.Reset()
		code, err = h.Runtime.Exec(ctx, id, workload.Command{Argv: []string{"sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done"}, Stdout: &out})
		if err != nil || code != 0 || strings.Count(out.String(), "\n") != 20000 || !strings.HasSuffix(out.String(), "line19999\n") {
			t.Fatalf("a long output: code %d, %v, %d lines", code, err, strings.Count(out.String(), "\n"))
		}
		// a program that is not there does not succeed
		if code, err := h.Runtime.Exec(ctx, id, workload.Command{Argv: []string{"/no/such/program"}}); err == nil && code == 0 {
			t.Fatal("a missing program succeeded")
		}
		if _, err := h.Runtime.Exec(ctx, id, workload.Command{}); err == nil {
			t.Fatal("an empty command ran")
		}
	})

	t.Run("ExecEndsWithItsContext", func(t *testing.T) {
		ctx := ctxOf(t)
		id, _ := started(t, ctx, spec("sleep", "600"))
		ectx, cancel := context.WithCancel(ctx)
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() {
			_, err := h.Runtime.Exec(ectx, id, workload.Command{Argv: []string{"sh", "-c", "echo started; exec sleep 600"}, Stdout: &syncWriter{w: &out, seen: "started", cancel: cancel}})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("exec whose context ended: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("exec did not return when its context ended")
		}
	})

	t.Run("AProcessThatIsGone", func(t *testing.T) {
		ctx := ctxOf(t)
		id, exit := started(t, ctx, spec("true"))
		<-exit
		if err := h.Runtime.Remove(ctx, id); err != nil {
			t.Fatalf("remove: %v", err)
		}
		if _, err := h.Runtime.Inspect(ctx, id); err == nil {
			t.Fatal("inspect of a removed process answered")
		}
		if _, err := h.Runtime.Exec(ctx, id, workload.Command{Argv: []string{"true"}}); err == nil {
			t.Fatal("exec in a removed process ran")
		}
		_ = h.Runtime.Remove(ctx, id) // again: of no consequence
	})

	t.Run("Facts", func(t *testing.T) {
		f, err := h.Runtime.Facts(ctxOf(t))
		if err != nil || f.Kind == "" || f.Version == "" {
			t.Fatalf("facts %+v, %v", f, err)
		}
	})
}

// waitForLog follows the process's logs until they hold want.
func waitForLog(t *testing.T, ctx context.Context, rt workload.Runtime, id, want string) {
	t.Helper()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &syncWriter{w: &bytes.Buffer{}, seen: want, cancel: cancel}
	_ = rt.Logs(lctx, id, w)
	if !w.found {
		t.Fatalf("the process never printed %q", want)
	}
}

// syncWriter cancels once what was written holds seen.
type syncWriter struct {
	w      *bytes.Buffer
	seen   string
	cancel context.CancelFunc
	found  bool
}

func (s *syncWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if !s.found && strings.Contains(s.w.String(), s.seen) {
		s.found = true
		s.cancel()
	}
	return n, err
}

func flatten(rows [][]string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}
