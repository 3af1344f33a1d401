// Package jobdirtest writes job folders for tests, through jobdir's own types and Layout:
// job.json from a jobdir.Job, status.json from a jobdir.Status, and the files a benchmark
// leaves (results, logs) at the paths jobdir computes. Tests that write job folders use it
// rather than spelling a name or a schema themselves; a hostile test that needs malformed
// bytes writes them with File, at a path from the Layout.
//
// Writes are whole-file replacements (a temp file renamed into place) without fsync: a
// reader never sees half a file, and a fixture of thousands of nodes stays fast.
package jobdirtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// At is the job folder at path, with its id the folder's name (for tests that keep a job
// folder as a path).
func At(path string) jobdir.Dir {
	id, attempt := jobdir.SplitName(filepath.Base(path))
	return jobdir.Dir{Path: path, JobID: id, Attempt: attempt}
}

// Job writes j as d's job.json, creating d and its nodes folder. A zero Version is
// jobdir.JobVersion (as jobdir.WriteJob writes); any other is written as given, for tests of
// older files. The manifest snapshot is the one j.SetManifest recorded.
func Job(t testing.TB, d jobdir.Dir, j *jobdir.Job) jobdir.Dir {
	t.Helper()
	Mkdir(t, d.Nodes())
	if j.Version == 0 {
		j.Version = jobdir.JobVersion
	}
	writeJSON(t, d.JobFile(), j)
	return d
}

// NewJob is a job of the given id on hosts (world len(hosts)) whose manifest snapshot is m
// (a jobdir.JobManifest, or a map for fields JobManifest does not name).
func NewJob(t testing.TB, id string, hosts []string, m any) *jobdir.Job {
	t.Helper()
	j := &jobdir.Job{Job: id, World: len(hosts), Nodes: hosts}
	if m != nil {
		if err := j.SetManifest(m); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// Status writes st as n's status.json, creating the node folder.
func Status(t testing.TB, n jobdir.NodeDir, st *jobdir.Status) {
	t.Helper()
	Mkdir(t, n.Path)
	writeJSON(t, n.Status(), st)
}

// Result writes a benchmark's result file into n's results folder for it.
func Result(t testing.TB, n jobdir.NodeDir, bench, file string, data []byte) {
	t.Helper()
	File(t, filepath.Join(n.Results(bench), file), data)
}

// Log writes a benchmark's log in n.
func Log(t testing.TB, n jobdir.NodeDir, bench string, data []byte) {
	t.Helper()
	File(t, n.Log(bench), data)
}

// File writes data at path (mode 0644), creating its folder: for the files the other
// helpers do not write, and for the malformed ones of hostile tests.
func File(t testing.TB, path string, data []byte) {
	t.Helper()
	Mkdir(t, filepath.Dir(path))
	tmp := path + ".jobdirtest"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Mkdir creates the folder path and its parents (mode 0755).
func Mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	File(t, path, append(data, '\n'))
}

// TelemetrySummary writes s as n's telemetry summary of s.Run (a zero Telemetry version is
// jobdir.TelemetryVersion).
func TelemetrySummary(t testing.TB, n jobdir.NodeDir, s *jobdir.TelemetrySummary) {
	t.Helper()
	if s.Telemetry == 0 {
		s.Telemetry = jobdir.TelemetryVersion
	}
	writeJSON(t, n.TelemetrySummary(s.Run), s)
}

// NodeRecord writes r as n's node.json, creating the node folder; a zero Version is set
// to jobdir.NodeRecordVersion.
func NodeRecord(t testing.TB, n jobdir.NodeDir, r *jobdir.NodeRecord) {
	t.Helper()
	if r.Version == 0 {
		r.Version = jobdir.NodeRecordVersion
	}
	Mkdir(t, n.Path)
	writeJSON(t, n.NodeRecord(), r)
}

// NodeFolder is the folder of node rank on host of job (attempt 0) in shared, created and
// open for writing; it is closed when the test ends.
func NodeFolder(t testing.TB, shared, job string, rank int, host string) *jobdir.NodeFolder {
	t.Helper()
	jf, err := jobdir.Layout{Shared: shared}.CreateJob(job, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	nf, err := jf.CreateNode(rank, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nf.Close() })
	return nf
}
