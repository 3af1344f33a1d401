package jobdir

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStatusRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StatusFile)
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	end := start.Add(5 * time.Minute)
	want := &Status{Version: StatusVersion, Job: "123", Attempt: 1, Rank: 1, Host: "n2", World: 3, Outcome: OutcomeSuccess,
		ImageID: "sha256:ab", ImageKey: "cd", StartedAt: start, FinishedAt: &end,
		Phases:     []PhaseStatus{{Name: PhaseContext, StartedAt: start, FinishedAt: &end, Outcome: PhaseOK}},
		Benchmarks: []BenchmarkStatus{{Name: "train", Outcome: OutcomeSuccess, StartedAt: start, FinishedAt: &end, DurationSeconds: 12.5, Log: "train.log", Diagnostics: "diagnostics/train"}}}
	if err := WriteStatus(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStatus(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temp files left behind: %v", ents)
	}
	data, _ := os.ReadFile(path)
	for _, key := range []string{`"imageId"`, `"exitCode"`, `"durationSeconds"`, `"finishedAt"`, `"phases"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("status.json lacks %s:\n%s", key, data)
		}
	}
}

func TestReadStatus(t *testing.T) {
	cases := []struct {
		name, data string
		running    bool
		wantErr    bool
	}{
		{"unknown fields are ignored", `{"version":2,"rank":0,"outcome":"success","finishedAt":"2026-11-23T10:05:00Z","newField":{"x":1}}`, false, false},
		{"running without an end", `{"outcome":"running","startedAt":"2026-11-23T10:00:00Z"}`, true, false},
		{"running with an end is not running", `{"outcome":"running","finishedAt":"2026-11-23T10:05:00Z"}`, false, false},
		{"not JSON", "\x00\x01garbage", false, true},
		{"truncated", `{"outcome":"succ`, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), StatusFile)
			os.WriteFile(path, []byte(c.data), 0o644)
			st, err := ReadStatus(path)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if err == nil && st.Running() != c.running {
				t.Fatalf("Running() = %v", st.Running())
			}
		})
	}
}
