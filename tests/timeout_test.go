package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/tests/testbed"
)

// A benchmark that runs past its timeout: diagnostics are taken while it still runs (its
// processes listed by the engine), then it is stopped and removed; the node says timeout
// and exits 3.
func TestRunTimeoutCapturesDiagnosticsAndStops(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	dir := t.TempDir()
	body := "name: timeout\nimage: {dockerfile: " + repoPath(t, "models/dummy/Dockerfile") + "}\ngpu: {vendor: none}\n" +
		"benchmarks:\n  - {name: sleepy, command: [/dummy, --rows, \"1\", --sleep, 300s], timeout: 3s}\n"
	mf := filepath.Join(dir, "benchmark.yaml")
	os.WriteFile(mf, []byte(body), 0o644)
	m := loadManifest(t, mf)
	env := map[string]string{"BENCHCTL_JOB_ID": fmt.Sprintf("timeout-%d", time.Now().UnixNano())}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	node, err := local.Scheduler{}.Node(lookup)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := runner.Run(context.Background(), runner.Options{Node: node, Manifest: m, SharedDir: shared,
		Lookup:  lookup,
		Engine:  func() (runner.Engine, error) { return client.New(client.WithHost(tb.Sockets[tb.Nodes[0]])) },
		Version: "e2e"})
	var re *runner.RunError
	if !errors.As(err, &re) || re.ExitCode() != 3 {
		t.Fatalf("want a run error with exit 3, got %v", err)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Fatalf("took %v", took)
	}
	b := res.Status.Benchmarks[0]
	if b.Outcome != runner.OutcomeTimeout || !strings.Contains(b.Error, "timed out after 3s") || b.Diagnostics == "" {
		t.Fatalf("benchmark status %+v", b)
	}
	sum, err := os.ReadFile(filepath.Join(res.NodeDir, jobdir.DiagRel("sleepy"), jobdir.DiagSummaryFile))
	if err != nil || !strings.Contains(string(sum), "processes (") || !strings.Contains(string(sum), "/dummy") {
		t.Fatalf("diagnostics did not list the running processes: %v\n%s", err, sum)
	}
	list, err := tb.Engine(t, tb.Nodes[0]).ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", runner.LabelJob+"="+env["BENCHCTL_JOB_ID"])})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("container left after the timeout: %v %v", list.Items, err)
	}
}
