package commands

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/local"
)

// fakeSubmitter is a scheduler that starts nothing: it keeps what it was asked, and says
// what a test tells it to.
type fakeSubmitter struct {
	local.Scheduler
	refuse   error
	asked    *[]scheduler.Submission
	pruned   *int
	dryRuns  *int
	requests string
}

func (f fakeSubmitter) DryRun(s scheduler.Submission) (scheduler.Plan, error) {
	*f.dryRuns++
	*f.asked = append(*f.asked, s)
	return scheduler.Plan{Text: "# would start " + s.Manifest.Name + "\n", Document: map[string]string{"would": s.Manifest.Name}}, f.refuse
}

func (f fakeSubmitter) Submit(_ context.Context, s scheduler.Submission) (scheduler.Submitted, error) {
	*f.asked = append(*f.asked, s)
	if f.refuse != nil {
		return scheduler.Submitted{}, f.refuse
	}
	return scheduler.Submitted{Job: "777", Nodes: 3, Request: f.requests, Token: "0123456789abcdef"}, nil
}

func (f fakeSubmitter) Prune(context.Context, jobdir.Layout, time.Time) (int, error) {
	*f.pruned++
	return 0, nil
}

// submit speaks only scheduler.Submitter: what it hands the scheduler is the job in
// benchctl's words, a dry run prints the scheduler's plan and submits nothing, and a
// scheduler's refusal is the command's error with nothing recorded.
func TestSubmitSpeaksTheSubmitterSeam(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(mf, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}, {name: b, command: [\"true\"]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared")
	var asked []scheduler.Submission
	pruned, dry := 0, 0
	fake := fakeSubmitter{asked: &asked, pruned: &pruned, dryRuns: &dry, requests: "request.yaml"}
	submit := func(s scheduler.Submitter, extra func(*SubmitOptions)) (string, error) {
		var out bytes.Buffer
		opts := &SubmitOptions{Src: ManifestSource{Manifest: mf}, SharedDir: shared, Benchmarks: []string{"b"}, Submitter: s, Output: "table"}
		if extra != nil {
			extra(opts)
		}
		err := Submit(context.Background(), iostreams.New(nil, &out, &bytes.Buffer{}), opts)
		return out.String(), err
	}

	out, err := submit(fake, func(o *SubmitOptions) { o.DryRun = true })
	if err != nil || out != "# would start x\n" || dry != 1 || pruned != 0 {
		t.Fatalf("dry run: %v, %q, %d dry runs, %d prunes", err, out, dry, pruned)
	}
	if _, err := os.Stat(jobdir.Layout{Shared: shared}.Submit()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run wrote the submission folder: %v", err)
	}
	out, err = submit(fake, func(o *SubmitOptions) { o.DryRun, o.Output = true, "json" })
	if err != nil || out != "{\n  \"would\": \"x\"\n}\n" {
		t.Fatalf("dry run -o json: %v, %q", err, out)
	}

	out, err = submit(fake, nil)
	if err != nil || out != "777\n" || pruned != 1 {
		t.Fatalf("submit: %v, %q, %d prunes", err, out, pruned)
	}
	s := asked[len(asked)-1]
	self, _ := os.Executable()
	self, _ = filepath.EvalSymlinks(self)
	if s.Manifest.Name != "x" || len(s.Selected) != 1 || s.Selected[0].Name != "b" || s.Benchmarks[0] != "b" || s.SharedDir != shared || s.Benchctl != self {
		t.Errorf("the scheduler was asked for %+v", s)
	}

	refused := fake
	refused.refuse = errors.New("queue closed")
	if _, err := submit(refused, nil); err == nil || err.Error() != "queue closed" {
		t.Fatalf("a refused submission: %v", err)
	}
	if _, err := submit(nil, nil); err == nil || !strings.Contains(err.Error(), "no scheduler") {
		t.Fatalf("no submitter: %v", err)
	}
}

// --runtime process refuses a manifest that builds its image, before anything is submitted;
// one that runs as processes is handed to the scheduler with the runtime.
func TestSubmitRuntimeProcess(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(dir, "built.yaml")
	plain := filepath.Join(dir, "plain.yaml")
	os.WriteFile(built, []byte("name: b\nimage: {dockerfile: Dockerfile}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	os.WriteFile(plain, []byte("name: p\nimage: {ref: site-env}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	var asked []scheduler.Submission
	pruned, dry := 0, 0
	fake := fakeSubmitter{asked: &asked, pruned: &pruned, dryRuns: &dry}
	submit := func(mf, engine string) error {
		opts := &SubmitOptions{Src: ManifestSource{Manifest: mf}, SharedDir: filepath.Join(dir, "shared"), Submitter: fake, Output: "table", Runtime: "process", DryRun: true, Engine: engine}
		return Submit(context.Background(), iostreams.New(nil, &bytes.Buffer{}, &bytes.Buffer{}), opts)
	}
	err := submit(built, "")
	if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "--runtime process: image.dockerfile: the process runtime builds no image") || dry != 0 {
		t.Fatalf("a built image with --runtime process: %v (%d dry runs)", err, dry)
	}
	if err := submit(plain, "podman"); exitcode.Of(err) != exitcode.Invalid || dry != 0 {
		t.Fatalf("--engine with --runtime process: %v", err)
	}
	if err := submit(plain, ""); err != nil || dry != 1 || asked[0].Runtime != "process" || asked[0].Engine != "" {
		t.Fatalf("%v, %+v", err, asked)
	}
}
