package jobdir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The secrets in jobs/.submit were never deleted: a job's are removed when it ends, and
// old ones are pruned unless their job is still active.
func TestSubmitFilesAreRemoved(t *testing.T) {
	l := Layout{t.TempDir()}
	os.MkdirAll(l.Submit(), 0o700)
	mk := func(token string, age time.Duration) {
		f := l.SubmitFiles(token)
		os.WriteFile(f.Secret, []byte("s"), 0o600)
		os.WriteFile(f.Script, []byte("#!/bin/sh"), 0o700)
		at := time.Now().Add(-age)
		os.Chtimes(f.Secret, at, at)
		os.Chtimes(f.Script, at, at)
	}
	record := func(token, id string, age time.Duration) {
		if err := l.RecordSubmitted(token, id); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		os.Chtimes(filepath.Join(l.Submit(), id+".job"), at, at)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	mk("aaaa", time.Hour)
	record("aaaa", "101", time.Hour)
	if err := l.RemoveSubmitted("101"); err != nil {
		t.Fatal(err)
	}
	if f := l.SubmitFiles("aaaa"); exists(f.Secret) || exists(f.Script) || exists(filepath.Join(l.Submit(), "101.job")) {
		t.Fatal("the ended job's files are still there")
	}
	if err := l.RemoveSubmitted("101"); err != nil {
		t.Fatalf("a second removal: %v", err)
	}
	if err := l.RemoveSubmitted("../x"); err == nil {
		t.Fatal("a path was taken for a job id")
	}

	mk("bbbb", 30*24*time.Hour) // old, job ended
	record("bbbb", "102", 30*24*time.Hour)
	mk("cccc", 30*24*time.Hour) // old, job still running (a long one)
	record("cccc", "103", 30*24*time.Hour)
	mk("dddd", 30*24*time.Hour) // old, sbatch never gave it an id
	mk("eeee", time.Minute)     // new, not yet recorded (being submitted now)
	mk("ffff", time.Hour)       // recent job
	record("ffff", "104", time.Hour)
	asked := map[string]bool{}
	n, err := l.PruneSubmitted(7*24*time.Hour, time.Now(), func(id string) bool { asked[id] = true; return id == "103" })
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2 (102 and the orphan)", n, err)
	}
	for token, want := range map[string]bool{"bbbb": false, "cccc": true, "dddd": false, "eeee": true, "ffff": true} {
		if got := exists(l.SubmitFiles(token).Secret); got != want {
			t.Errorf("secret %s kept = %v, want %v", token, got, want)
		}
	}
	if asked["104"] {
		t.Error("the scheduler was asked about a recent job")
	}
}

// A prune asks the scheduler about at most maxPruneAsks jobs: each question can take
// seconds, and submit must not wait minutes for them.
func TestPruneAsksABoundedNumberOfJobs(t *testing.T) {
	l := Layout{t.TempDir()}
	os.MkdirAll(l.Submit(), 0o700)
	old := time.Now().Add(-30 * 24 * time.Hour)
	for i := range maxPruneAsks + 20 {
		token, id := fmt.Sprintf("t%03d", i), fmt.Sprintf("%d", 1000+i)
		os.WriteFile(l.SubmitFiles(token).Secret, []byte("s"), 0o600)
		l.RecordSubmitted(token, id)
		os.Chtimes(filepath.Join(l.Submit(), id+".job"), old, old)
		os.Chtimes(l.SubmitFiles(token).Secret, old, old)
	}
	asked := 0
	n, err := l.PruneSubmitted(7*24*time.Hour, time.Now(), func(string) bool { asked++; return false })
	if err != nil || asked != maxPruneAsks || n != maxPruneAsks {
		t.Fatalf("asked %d, removed %d, %v; want %d", asked, n, err, maxPruneAsks)
	}
}
