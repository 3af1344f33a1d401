package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/tests/testbed"
)

// Every node of a 3-node job writes node.json before its benchmark runs: the machine, the
// engine and the image it ran. Rank 2 reads a recorded H100 node's facts through the test
// hook (BENCHCTL_TEST_HOST_ROOT), so its kernel differs: collect reports that difference in
// the table's notes and summary.json, naming rank 2 alone with the odd kernel.
func TestNodeRecordOnEveryNodeAndDifferenceCollected(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	mf := dummyManifest(t, "noderecord", []string{"/dummy", "--rows", "1"})
	root := repoPath(t, "tests/fixtures/host/h100")
	id, out, err := runJobWith(t, tb, mf, shared, true, []string{"--export=ALL,BENCHCTL_TEST_HOST_ROOT=2:" + root})
	if err != nil {
		t.Fatalf("job %s: %v\n%s", id, err, out)
	}
	live, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	liveKernel := strings.TrimSpace(string(live))
	var fr safefile.Reader
	for i, d := range nodeDirs(tb) {
		nd := jobdir.Layout{Shared: shared}.Job(id, 0).NodeNamed(d)
		rec, err := jobdir.ReadNodeRecord(&fr, nd.NodeRecord())
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		st := readStatus(t, shared, id, d)
		if rec.Rank != i || rec.Host != tb.Nodes[i] || rec.Job != id || rec.Engine.Version == "" || len(rec.Engine.Components) == 0 ||
			len(rec.Images) != 1 || rec.Images[0].ID != st.ImageID || len(rec.Images[0].Benchmarks) != 1 || rec.Images[0].Name != "of dummy" || rec.Benchctl == "" ||
			rec.GPU.Vendor != "none" || !strings.HasPrefix(rec.Machine.Slurm, "slurm") {
			t.Errorf("%s: images %+v, engine %+v, slurm %q, benchctl %q; record %+v", d, rec.Images, rec.Engine, rec.Machine.Slurm, rec.Benchctl, rec)
		}
		want := liveKernel
		if i == 2 {
			want = "5.15.0-105-generic"
			if len(rec.Machine.Network) != 5 || rec.Machine.CPU.Threads != 224 {
				t.Errorf("rank 2 did not read the recorded tree: %+v", rec.Machine)
			}
		}
		if rec.Machine.Kernel.Release != want {
			t.Errorf("%s: kernel %q, want %q", d, rec.Machine.Kernel.Release, want)
		}
		// Gathered as the benchmark starts (beside the critical path), and before the node's
		// end: never left to a node that ended.
		if len(st.Benchmarks) != 1 || st.FinishedAt == nil || rec.WrittenAt.After(*st.FinishedAt) {
			t.Errorf("%s: node.json written at %v, not before the node ended (%v; %+v)", d, rec.WrittenAt, st.FinishedAt, st.Benchmarks)
		}
	}

	code, stdout, stderr := benchctlRun(t, tb.Env(), "collect", id, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("collect:\n%s", stdout)
	wantNote := "note: node record differs: kernel: ranks 0-1: " + liveKernel
	if !strings.Contains(stdout, wantNote) || !strings.Contains(stdout, "; rank 2 ("+tb.Nodes[2]+"): 5.15.0-105-generic #115-Ubuntu") {
		t.Errorf("the table's notes do not report rank 2's kernel:\n%s", stdout)
	}
	data, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job(id, 0).Output(jobdir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.NodeRecords.Nodes != 3 || s.NodeRecords.WithoutCount != 0 {
		t.Errorf("nodeRecords: %+v", s.NodeRecords)
	}
	var kernel *results.FieldDiff
	for i, d := range s.NodeRecords.Differs {
		if d.Field == "kernel" {
			kernel = &s.NodeRecords.Differs[i]
		}
		if d.Field == "engine" || d.Field == "benchctl" || strings.HasPrefix(d.Field, "image.") {
			t.Errorf("%s differs, but every node ran the same engine version, benchctl and image: %+v", d.Field, d)
		}
	}
	if kernel == nil || len(kernel.Values) != 2 || kernel.Values[0].Ranks != "0-1" || kernel.Values[1].Ranks != "2" ||
		!strings.HasPrefix(kernel.Values[1].Value, "5.15.0-105-generic") {
		t.Errorf("summary.json's kernel difference: %+v", kernel)
	}
}

// srun benchctl doctor on every node, with rank 1 reading a recorded node with five RDMA
// devices (the test hook): rank 0 finds that the nodes do not agree on firmware, names the
// fields and rank 1, and doctor exits 1; every node prints its record's key facts.
func TestDoctorFindsNodesThatDisagreeOnFirmware(t *testing.T) {
	tb := testbed.Require(t)
	shared := tb.FreshDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "srun", "-N", strconv.Itoa(len(tb.Nodes)), "--ntasks-per-node=1", "-p", tb.Partition,
		tb.Benchctl(t), "doctor", "--shared-dir", shared)
	cmd.Env = append(tb.Env(), "BENCHCTL_TEST_HOST_ROOT=1:"+repoPath(t, "tests/fixtures/host/h100"))
	out, err := cmd.CombinedOutput()
	t.Logf("doctor:\n%s", out)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("doctor: %v, want exit 1", err)
	}
	text := string(out)
	if n := strings.Count(text, "FAIL  same driver and firmware on every node: "); n != 1 {
		t.Errorf("%d nodes said they disagree, want rank 0 alone", n)
	}
	if !strings.Contains(text, "net.mlx5_0.firmware: 2 of 3 nodes: (unavailable) or absent; rank 1 ("+tb.Nodes[1]+"): 28.39.1002") {
		t.Errorf("the disagreement does not name mlx5_0's firmware on rank 1")
	}
	if n := strings.Count(text, "ok    node record: kernel "); n != len(tb.Nodes) || !strings.Contains(text, "mlx5_0 InfiniBand fw 28.39.1002 400 Gb/sec (4X NDR)") {
		t.Errorf("%d nodes printed their record's facts, want %d", n, len(tb.Nodes))
	}
}
