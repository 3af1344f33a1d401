package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// stranger is a uid that is not the test's: a co-writer of the shared folder.
const stranger = 4242

// asStranger makes path (and what it holds) the stranger's, as a co-writer's planted files
// are; the test runs as root (as CI does) to be able to.
func asStranger(t *testing.T, path string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatalf("this test plants another user's files: it runs as root (CI does)")
	}
	if err := filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, stranger, stranger)
	}); err != nil {
		t.Fatal(err)
	}
}

// A co-writer's planted history index (with forged rows, and the perf.csv sizes and times
// anyone can read), or one that others may write, is not believed: history is rebuilt from
// the caller's own job folders. A co-writer's job folder of the same manifest is not the
// caller's history, nor its baseline (compare --against last|best).
func TestCoWritersCannotForgeHistoryOrBaselines(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	historyJob(t, l, "8", "m", 1, "100")
	cur := historyJob(t, l, "9", "m", 3, "120")
	rows, err := History(l, HistoryOptions{Manifest: "m"})
	if err != nil || len(rows) != 2 {
		t.Fatalf("%v %+v", err, rows)
	}
	idxPath := filepath.Join(l.Jobs(), ".history", "index.json")
	var idx historyIndexFile
	data, _ := os.ReadFile(idxPath)
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	for name, e := range idx.Jobs { // the forgery: every row 999999, from commit evil
		for i := range e.Rows {
			e.Rows[i].Performance, e.Rows[i].GitCommit = "999999", "evil"
		}
		idx.Jobs[name] = e
	}
	forged, _ := json.Marshal(idx)
	check := func(what string) {
		t.Helper()
		rows, err := History(l, HistoryOptions{Manifest: "m"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Performance == "999999" || r.GitCommit == "evil" {
				t.Errorf("%s: a forged row is shown: %+v", what, r)
			}
		}
	}
	os.WriteFile(idxPath, forged, 0o644)
	asStranger(t, idxPath)
	check("the stranger's index")
	os.Remove(idxPath)
	os.WriteFile(idxPath, forged, 0o666)
	os.Chmod(idxPath, 0o666)
	check("an index others may write")

	// A stranger's job of the same manifest, started between: neither history nor baseline.
	evil := historyJob(t, l, "900", "m", 2, "5")
	asStranger(t, evil.Path)
	rows, _ = History(l, HistoryOptions{Manifest: "m"})
	for _, r := range rows {
		if r.Job == "900" {
			t.Errorf("the stranger's job is in the history: %+v", rows)
		}
	}
	d, err := Against(l, cur, AgainstLast)
	if err != nil || d.JobID != "8" {
		t.Errorf("against last: %s %v, want job 8", d.JobID, err)
	}
}

// A planted newer attempt of someone's job (a folder of another user, or a link) is not the
// job's newest attempt: collect, compare and --check read, and collect writes, the job's own.
func TestAPlantedAttemptIsNotTheJobs(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	historyJob(t, l, "7", "m", 1, "100")
	planted := l.Job("7", 3).Path
	os.MkdirAll(planted, 0o755)
	os.WriteFile(filepath.Join(planted, jobdir.JobFile), []byte(`{"job":"7"}`), 0o644)
	asStranger(t, planted)
	os.Symlink(t.TempDir(), l.Job("7", 4).Path) // a link by an attempt's name
	d, err := l.Find("7", -1)
	if err != nil || d.Attempt != 0 || !strings.HasSuffix(d.Path, "/jobs/7") {
		t.Fatalf("Find: %+v %v", d, err)
	}
	dirs, err := l.NewestAttempts(-1)
	if err != nil || len(dirs) != 1 || dirs[0].Attempt != 0 {
		t.Fatalf("NewestAttempts: %+v %v", dirs, err)
	}
	// The job's own requeue is still its newest attempt.
	own := l.Job("7", 1).Path
	os.MkdirAll(own, 0o755)
	if d, _ := l.Find("7", -1); d.Attempt != 1 {
		t.Errorf("the job's own attempt 1 is not its newest: %+v", d)
	}
}

// Even the caller's own index is decoded within bounds: 1.2 million empty rows (a planted
// 30 MB index of 9,999,000 made history hold 7.6 GB) is not decoded, and history is
// rebuilt from the job folders.
func TestAnIndexOfMillionsOfRowsIsNotDecoded(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	historyJob(t, l, "8", "m", 1, "100")
	if _, err := History(l, HistoryOptions{Manifest: "m"}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"version":1,"jobs":{"8":{"size":1,"mtime":1,"rows":[`)
	for i := range 1_200_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteString(`]}}}`)
	p := filepath.Join(l.Jobs(), ".history", "index.json")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if idx := readHistoryIndex(l); len(idx.Jobs) != 0 {
		t.Errorf("an index of 1.2 million rows was decoded: %d jobs", len(idx.Jobs))
	}
	rows, err := History(l, HistoryOptions{Manifest: "m"})
	if err != nil || len(rows) != 1 || rows[0].Performance != "100" {
		t.Errorf("%v %+v", err, rows)
	}
}

// --against last over 4,000 collected jobs of the manifest (docs/PERFORMANCE.md): the jobs
// folder is read once, not once per job.
func BenchmarkAgainstLast4000(b *testing.B) {
	l := jobdir.Layout{Shared: b.TempDir()}
	var cur jobdir.Dir
	for i := range 4000 {
		cur = historyJob(b, l, strconv.Itoa(1000+i), "m", 1+i%27, "100")
	}
	for b.Loop() {
		if _, err := Against(l, cur, AgainstLast); err != nil {
			b.Fatal(err)
		}
	}
}
