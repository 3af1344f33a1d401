package compare

import (
	"fmt"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// BenchmarkHistory10000 is history over 10,000 collected jobs of one manifest (3 rows
// each), with the index current: what a user's `benchctl history` costs on a busy shared
// directory. The first call (the index built from the folders) is reported apart.
//
//	go test ./results -run '^$' -bench History10000 -benchtime 10x
func BenchmarkHistory10000(b *testing.B) {
	l := jobdir.Layout{Shared: b.TempDir()}
	const jobs = 10000
	perf := []byte("model,metric,performance,status\na,x,1,SUCCESS\nb,x,2,SUCCESS\nc,y,3,SUCCESS\n")
	for i := range jobs {
		id := fmt.Sprint(100000 + i)
		j := jobdirtest.NewJob(b, id, []string{"h0"}, jobdir.JobManifest{Name: "m"})
		j.StartedAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		d := jobdirtest.Job(b, l.Job(id, 0), j)
		jobdirtest.File(b, d.Output(jobdir.PerfFile), perf)
	}
	start := time.Now()
	rows, err := History(l, HistoryOptions{Manifest: "m", Last: 20})
	if err != nil || len(rows) != 60 {
		b.Fatalf("%d rows, %v", len(rows), err)
	}
	b.Logf("first call (the index built from 10,000 job folders): %s", time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	for b.Loop() {
		if _, err := History(l, HistoryOptions{Manifest: "m", Last: 20}); err != nil {
			b.Fatal(err)
		}
	}
}
