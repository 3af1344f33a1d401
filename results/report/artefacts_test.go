package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// What tools wrote into a node's output folder is listed per node, with sizes, the results
// CSV marked; the tools are named; links, FIFOs and sockets are listed by type and never
// followed or opened (a FIFO opened for reading would hang collect).
func TestArtefactsListed(t *testing.T) {
	job := resultstest.WriteToolsJob(t, t.TempDir(), 2, []string{"tracer", "prepost"})
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nb,1,u\n")
	resultstest.WriteNode(t, job, 1, jobdir.OutcomeFailure, "")
	res := resultstest.NodeOf(job, 0).Results("b")
	os.WriteFile(filepath.Join(res, "trace.txt"), []byte("12345"), 0o644)
	os.MkdirAll(filepath.Join(res, "run_directory"), 0o755)
	os.WriteFile(filepath.Join(res, "run_directory", "mark.sh"), []byte("#!/bin/sh\n"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("outside the job folder"), 0o600)
	if err := os.Symlink(secret, filepath.Join(res, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(res, "dirlink")); err != nil { // a folder's link: not entered
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(res, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Rank 1 failed, and its tool still wrote a profile.
	os.WriteFile(filepath.Join(resultstest.NodeOf(job, 1).Results("b"), "profile.json"), []byte("{}"), 0o644)

	done := make(chan *results.Summary, 1)
	go func() { done <- resultstest.Aggregate(t, job) }()
	var s *results.Summary
	select {
	case s = <-done:
	case <-time.After(time.Minute):
		t.Fatal("collect hangs on the FIFO")
	}
	b := s.Benchmarks[0]
	if strings.Join(b.Tools, ",") != "tracer,prepost" {
		t.Errorf("tools %q", b.Tools)
	}
	if len(b.Artefacts) != 2 {
		t.Fatalf("artefacts %+v", b.Artefacts)
	}
	var got []string
	for _, f := range b.Artefacts[0].Files {
		got = append(got, fmt.Sprintf("%s %s %d %v", f.Path, f.Type, f.Size, f.Results))
	}
	n0 := "nodes/0-h0/results/b/"
	joined := strings.Join(got, "\n")
	for _, w := range []string{n0 + "b.csv file 31 true", n0 + "dirlink link 0 false", n0 + "fifo fifo 0 false", n0 + "link link 0 false", n0 + "run_directory/mark.sh file 10 false", n0 + "trace.txt file 5 false"} {
		if !strings.Contains(joined, w) {
			t.Errorf("no %q in\n%s", w, joined)
		}
	}
	if len(got) != 6 || b.Artefacts[0].Bytes != 31+10+5 {
		t.Errorf("%d files, %d bytes:\n%s", len(got), b.Artefacts[0].Bytes, joined)
	}
	if a := b.Artefacts[1]; a.Rank != 1 || len(a.Files) != 1 || a.Files[0].Path != "nodes/1-h1/results/b/profile.json" {
		t.Errorf("the failed node's artefacts: %+v", a)
	}
	// summary.json carries them, and the report links them.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(s); err != nil || !strings.Contains(buf.String(), `"artefacts"`) || strings.Contains(buf.String(), "outside the job folder") {
		t.Errorf("summary.json: %v\n%s", err, buf.String())
	}
	buf.Reset()
	if err := WriteReport(&buf, s); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, w := range []string{`href="nodes/0-h0/results/b/trace.txt"`, `href="nodes/0-h0/results/b/run_directory/mark.sh"`, "tracer, prepost", "fifo"} {
		if !strings.Contains(page, w) {
			t.Errorf("the report has no %s", w)
		}
	}
}

// A tool that wrote a million files or a 50-level tree costs collect a bounded listing:
// at most MaxArtefacts files, MaxArtefactDepth levels, and it says how many it left out.
// Names with markup are escaped in the report, and linked percent-encoded.
func TestArtefactsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes thousands of files")
	}
	job := resultstest.WriteToolsJob(t, t.TempDir(), 1, nil)
	resultstest.WriteNode(t, job, 0, jobdir.OutcomeSuccess, "model,performance,metric\nb,1,u\n")
	res := resultstest.NodeOf(job, 0).Results("b")
	many := filepath.Join(res, "many")
	os.MkdirAll(many, 0o755)
	for i := range results.MaxArtefactScan + 500 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deep := res
	for range 50 {
		deep = filepath.Join(deep, "d")
	}
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "bottom"), nil, 0o644)
	os.WriteFile(filepath.Join(res, `<b>x#y?.txt`), []byte("x"), 0o644)

	s := resultstest.Aggregate(t, job)
	a := s.Benchmarks[0].Artefacts[0]
	if len(a.Files) != results.MaxArtefacts || a.Omitted == 0 || !a.Incomplete || a.Deep != 1 {
		t.Errorf("files %d omitted %d incomplete %v deep %d", len(a.Files), a.Omitted, a.Incomplete, a.Deep)
	}
	for _, f := range a.Files {
		if strings.Count(f.Path, "/") > 4+results.MaxArtefactDepth {
			t.Errorf("listed deeper than %d: %s", results.MaxArtefactDepth, f.Path)
		}
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, s); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "<b>x") || !strings.Contains(page, "&lt;b&gt;x#y?.txt") || !strings.Contains(page, `href="nodes/0-h0/results/b/%3Cb%3Ex%23y%3F.txt"`) {
		t.Errorf("the report's name or link of <b>x#y?.txt:\n%s", grepLines(page, "x#y"))
	}
	if !strings.Contains(page, "<details") || !strings.Contains(page, "more not listed") {
		t.Errorf("a long list is not collapsed, or does not say what it left out")
	}
}
