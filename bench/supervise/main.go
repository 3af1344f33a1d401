// Command supervise-bench measures how fast a failure stops a whole job on the testbed
// (tests/testbed/up.sh must be up): a 3-node sbatch job where rank 2's benchmark exits 1
// after 2 s while ranks 0 and 1 would sleep 10 minutes. It reports, per repetition and as
// the median:
//
//   - stopped: from rank 2's container exit (its diagnostics are captured within
//     milliseconds of it) to the last aborted container stopped and removed (the end of the
//     last aborted benchmark in its node's status.json); target ≤ 10 s;
//   - ended: from the same exit to the last node's status saying it has ended.
//
// Usage:
//
//	make build examples && go run ./bench/supervise [-reps 5]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchctl/benchctl/bench/internal/timing"
	"github.com/benchctl/benchctl/diagnostics"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/tests/testbed"
)

func main() {
	reps := flag.Int("reps", 5, "repetitions (the median is reported)")
	bin := flag.String("benchctl", "bin/benchctl", "benchctl binary (built with make build)")
	flag.Parse()
	tb, err := testbed.Read(testbed.EnvFile())
	if err != nil {
		log.Fatalf("no testbed: %v (run tests/testbed/up.sh)", err)
	}
	if len(tb.Nodes) < 3 {
		log.Fatalf("the testbed has %d nodes; this needs 3", len(tb.Nodes))
	}
	benchctl, err := filepath.Abs(*bin)
	timing.Check(err)
	dockerfile, err := filepath.Abs("models/dummy/Dockerfile")
	timing.Check(err)
	shared, err := os.MkdirTemp(tb.SharedDir, "supervise-bench-")
	timing.Check(err)
	defer os.RemoveAll(shared)
	mf := filepath.Join(shared, "failfast.yaml")
	timing.Check(os.WriteFile(mf, []byte("name: failfast\nimage: {dockerfile: "+dockerfile+"}\ngpu: {vendor: none}\nbenchmarks:\n"+
		"  - {name: dummy, command: [/dummy, --rows, \"1\", --sleep, 600s, --fail-rank, \"2\", --fail-after, 2s, --exit-code, \"1\"], timeout: 15m}\n"), 0o644))
	script := filepath.Join(shared, "job.sh")
	timing.Check(os.WriteFile(script, []byte("#!/bin/sh\nexec srun --ntasks-per-node=1 \""+benchctl+"\" run --manifest \""+mf+"\" --shared-dir \""+shared+"\"\n"), 0o755))

	var stopped, ended []time.Duration
	for i := 0; i < *reps; i++ {
		sbatch := exec.Command("sbatch", "--parsable", "--wait", "-N", "3", "--ntasks-per-node=1", "-p", tb.Partition,
			"-o", filepath.Join(shared, "job-%j.out"), script)
		sbatch.Env = tb.Env() // the testbed's SLURM_CONF
		var stderr strings.Builder
		sbatch.Stderr = &stderr
		out, err := sbatch.Output() // exits non-zero: rank 2 fails the job, as it should
		id := strings.TrimSpace(strings.Split(string(out), ";")[0])
		if id == "" {
			log.Fatalf("sbatch gave no job id: %v\n%s", err, stderr.String())
		}
		s, e := measure(jobdir.Layout{Shared: shared}.Job(id, 0), tb.Nodes[:3])
		fmt.Printf("rep %d (job %s): last container stopped %.2f s after the failure, last node ended %.2f s after\n", i+1, id, s.Seconds(), e.Seconds())
		stopped, ended = append(stopped, s), append(ended, e)
	}
	fmt.Printf("median over %d: stopped %.2f s (target ≤ 10 s), ended %.2f s\n", *reps, timing.Median(stopped).Seconds(), timing.Median(ended).Seconds())
}

// measure reads the job folder: rank 2's failure time, the end of the aborted benchmarks
// and of every node.
func measure(job jobdir.Dir, nodes []string) (stopped, ended time.Duration) {
	var rep diagnostics.Report
	data, err := os.ReadFile(filepath.Join(job.Node(2, nodes[2]).Diagnostics("dummy"), jobdir.DiagReportFile))
	timing.Check(err)
	timing.Check(json.Unmarshal(data, &rep))
	failed := rep.CapturedAt
	for rank, n := range nodes {
		st, err := jobdir.ReadStatus(job.Node(rank, n).Status())
		timing.Check(err)
		if st.FinishedAt == nil || len(st.Benchmarks) == 0 || st.Benchmarks[0].FinishedAt == nil {
			log.Fatalf("rank %d did not record its end: %+v", rank, st)
		}
		if rank != 2 && st.Benchmarks[0].Outcome != jobdir.OutcomeAborted {
			log.Fatalf("rank %d was not aborted: %s", rank, st.Benchmarks[0].Outcome)
		}
		if rank != 2 {
			stopped = max(stopped, st.Benchmarks[0].FinishedAt.Sub(failed))
		}
		ended = max(ended, st.FinishedAt.Sub(failed))
	}
	return stopped, ended
}
