//go:build linux

package tests

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// Faults in the middle of a `distribution: stream` job, on the real testbed: rank 1 (n2)
// talks to its engine through an Engine API proxy (testbed.StartEngineProxy) that refuses
// its load, or reads it slowly and kills rank 1's benchctl part-way through.

// Rank 1's engine refuses the streamed load (HTTP 500): the job fails on every node, every
// status names rank 1, rank 1's engine has no image, and rank 2 has either nothing or
// exactly rank 0's image (it may have received the whole image before rank 1 failed:
// rank 1 forwards while its own load fails), never another one.
func TestStreamFaultEngineRefusesTheLoad(t *testing.T) {
	tb := testbed.Require(t)
	base := tb.FreshDir(t)
	mf := streamManifest(t, "stream", `["/allreduce", "--size", "1M", "--iters", "1", "--warmup", "0"]`)
	key := manifestKey(t, mf)
	removeByKey(t, tb, key) // every node starts cold
	t.Cleanup(func() { removeByKey(t, tb, key) })

	const refusal = "write /var/lib/docker/tmp/docker-import-0: no space left on device (refused by the test's engine proxy)"
	px := testbed.StartEngineProxy(t, tb.Sockets[tb.Nodes[1]], testbed.LoadFault{Refuse: true, RefuseAfter: 64 << 10, RefuseMessage: refusal})
	if err := os.WriteFile(filepath.Join(base, tb.Nodes[1]+".docker_host"), []byte(px.Host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	id, log, err := runPerNodeJob(t, tb, base, mf, "e2e-stream-refused")
	t.Logf("job %s ended after %.1f s: %v", id, time.Since(start).Seconds(), err)
	if err == nil {
		t.Fatalf("the job succeeded although rank 1's engine refused the image:\n%s", log)
	}
	if n := px.Loads.Load(); n != 1 {
		t.Errorf("rank 1 asked its engine (through the proxy) for %d loads, want 1", n)
	}
	for i, n := range tb.Nodes {
		s := readStatus(t, filepath.Join(base, n), id, fmt.Sprintf("%d-%s", i, n))
		t.Logf("%s: %s exit %d: %s", n, s.Outcome, s.ExitCode, s.Error)
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 1 {
			t.Errorf("%s: %s exit %d, want %s exit 1: %s", n, s.Outcome, s.ExitCode, runner.OutcomeFailure, s.Error)
		}
		for _, b := range s.Benchmarks {
			if b.Outcome == runner.OutcomeSuccess || b.Outcome == runner.OutcomeRunning {
				t.Errorf("%s: benchmark %s %s, though the images never reached every node", n, b.Name, b.Outcome)
			}
		}
		// Rank 1 reports its engine's answer; the others the job channel's verdict (or the
		// stream's failure, whichever comes first), which carries rank 1's reason.
		if !strings.Contains(s.Error, "image fan-out: rank 1: loading the image") || !strings.Contains(s.Error, refusal) {
			t.Errorf("%s does not name rank 1 and what its engine answered (%q): %s", n, refusal, s.Error)
		}
	}
	want := imagesWithKey(t, tb, tb.Nodes[0], key)
	if len(want) != 1 {
		t.Fatalf("rank 0's engine has %d images with the key, want 1 (it built it): %v", len(want), want)
	}
	if got := imagesWithKey(t, tb, tb.Nodes[1], key); len(got) != 0 {
		t.Errorf("%s's engine, which refused the load, has the image: %v", tb.Nodes[1], got)
	}
	got := imagesWithKey(t, tb, tb.Nodes[2], key)
	t.Logf("%s's engine has %v (rank 0 runs %s)", tb.Nodes[2], got, want[0])
	if len(got) > 1 || len(got) == 1 && got[0] != want[0] {
		t.Errorf("%s's engine has %v with the key; rank 0 runs %s", tb.Nodes[2], got, want[0])
	}
}

// Rank 1's benchctl is killed (SIGKILL) while it loads and forwards the stream: rank 2's
// stream is cut in the middle. The job ends well before the barrier timeout, ranks 0 and 2
// fail naming rank 1, and rank 2's engine has no image from the cut stream.
func TestStreamFaultRankKilledMidStream(t *testing.T) {
	tb := testbed.Require(t)
	if tb.ShellImage == "" {
		t.Fatal("the testbed has no shell image (BENCHCTL_TESTBED_SHELL_IMAGE): rerun tests/testbed/up.sh")
	}
	base := tb.FreshDir(t)
	mf, size := bigStreamManifest(t, tb, 48<<20)
	key := manifestKey(t, mf)
	removeByKey(t, tb, key)
	t.Cleanup(func() { removeByKey(t, tb, key) })

	// The proxy reads rank 1's load at 4 MiB/s (so that the whole chain goes at that pace:
	// the slowest sink sets it) and kills the load's client after 8 MiB, once it has made
	// sure that the client is the benchctl under test.
	comm := filepath.Base(tb.Benchctl(t))
	if len(comm) > 15 { // the kernel's comm is cut to 15 bytes
		comm = comm[:15]
	}
	killed := make(chan clientKill, 1)
	px := testbed.StartEngineProxy(t, tb.Sockets[tb.Nodes[1]], testbed.LoadFault{BytesPerSecond: 4 << 20, CallbackAfter: 8 << 20,
		OnBytes: func(pid int32, err error) {
			k := clientKill{skip: fmt.Sprint(err)}
			if err == nil {
				k = killClient(pid, comm)
			}
			select {
			case killed <- k:
			default: // a second load: rank 1 loads the image once
			}
		}})
	if err := os.WriteFile(filepath.Join(base, tb.Nodes[1]+".docker_host"), []byte(px.Host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	id, log, err := runPerNodeJob(t, tb, base, mf, "e2e-stream-killed")
	end := time.Now()
	t.Logf("job %s ended after %.1f s: %v", id, end.Sub(start).Seconds(), err)
	var k clientKill
	select {
	case k = <-killed:
	default:
		t.Fatalf("the proxy never got 8 MiB of rank 1's load (%d load bytes, %d loads):\n%s", px.LoadBytes.Load(), px.Loads.Load(), log)
	}
	if k.skip != "" {
		t.Fatalf("rank 1 was not killed: %s\n%s", k.skip, log)
	}
	t.Logf("rank 1 (pid %d) killed %.1f s after the start; the job ended %.1f s later; the proxy read %d of rank 1's load bytes (image %d bytes)",
		k.pid, k.at.Sub(start).Seconds(), end.Sub(k.at).Seconds(), px.LoadBytes.Load(), size)
	if err == nil {
		t.Fatalf("the job succeeded although rank 1 was killed:\n%s", log)
	}
	// The barrier timeout is 3 minutes: ending near it would mean that the ranks did not
	// notice rank 1's death and waited for it.
	if d := end.Sub(k.at); d > 60*time.Second {
		t.Errorf("the job ended %.0f s after rank 1 was killed; the other ranks must see it at once", d.Seconds())
	}
	for _, i := range []int{0, 2} {
		n := tb.Nodes[i]
		s := readStatus(t, filepath.Join(base, n), id, fmt.Sprintf("%d-%s", i, n))
		t.Logf("%s: %s exit %d: %s", n, s.Outcome, s.ExitCode, s.Error)
		if s.Outcome != runner.OutcomeFailure || s.ExitCode != 1 {
			t.Errorf("%s: %s exit %d, want %s exit 1: %s", n, s.Outcome, s.ExitCode, runner.OutcomeFailure, s.Error)
		}
		for _, b := range s.Benchmarks {
			if b.Outcome == runner.OutcomeSuccess || b.Outcome == runner.OutcomeRunning {
				t.Errorf("%s: benchmark %s %s, though rank 1 died before it had the image", n, b.Name, b.Outcome)
			}
		}
		// The stream's failure names rank 1 as where it began, whichever rank's report (rank
		// 0's, whose connection to rank 1 dropped, or rank 2's, whose stream was cut) reached
		// the job channel first; the job channel itself would say "lost rank 1" only after
		// its lost timeout (15 s).
		if !strings.Contains(s.Error, "image fan-out: rank 1: ") && !strings.Contains(s.Error, "lost rank 1 (") {
			t.Errorf("%s does not name rank 1: %s", n, s.Error)
		}
		// Rank 2 reports the cut before the job channel counts rank 1 lost: the verdict
		// must still put rank 1 first, not blame the rank that saw it.
		if strings.Contains(s.Error, "rank 2 ("+tb.Nodes[2]+") failed") || strings.Contains(s.Error, "rank 0 ("+tb.Nodes[0]+") failed") {
			t.Errorf("%s blames the rank that saw the cut: %s", n, s.Error)
		}
	}
	var killedStatus runner.Status
	if b, err := os.ReadFile(jobdir.Layout{Shared: filepath.Join(base, tb.Nodes[1])}.Job(id, 0).Node(1, tb.Nodes[1]).Status()); err == nil && json.Unmarshal(b, &killedStatus) == nil {
		t.Logf("%s (killed) left its status.json saying %s", tb.Nodes[1], killedStatus.Outcome)
	}
	if ids := imagesWithKey(t, tb, tb.Nodes[0], key); len(ids) != 1 {
		t.Errorf("rank 0's engine has %d images with the key, want 1 (it built it): %v", len(ids), ids)
	}
	for _, n := range tb.Nodes[1:] {
		if ids := imagesWithKey(t, tb, n, key); len(ids) != 0 {
			t.Errorf("%s's engine has %v from a stream cut in the middle", n, ids)
		}
	}
	if strings.Contains(log, "image loaded from the stream") {
		t.Errorf("a node says it loaded the image from a cut stream:\n%s", log)
	}
}

// clientKill is what killClient did.
type clientKill struct {
	pid  int32
	at   time.Time
	skip string // why nothing was killed
}

// killClient sends SIGKILL to pid if it is the benchctl under test (its comm is comm),
// through a pidfd so that the check and the kill are about the same process.
func killClient(pid int32, comm string) (k clientKill) {
	k.pid = pid
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		k.skip = fmt.Sprintf("pidfd_open(%d): %v", pid, err)
		return k
	}
	defer unix.Close(fd)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if got := strings.TrimSpace(string(b)); err != nil || got != comm {
		k.skip = fmt.Sprintf("pid %d is %q (%v), not %s: not killed", pid, got, err, comm)
		return k
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		k.skip = fmt.Sprintf("kill %d: %v", pid, err)
		return k
	}
	k.at = time.Now()
	return k
}

// bigStreamManifest writes a manifest (distribution: stream) whose image is the testbed's
// shell image plus a layer of size random bytes: big enough for the stream to take a while,
// and a key of its own (cold on every engine). It returns the manifest and the file's size.
func bigStreamManifest(t *testing.T, tb *testbed.Testbed, size int) (string, int) {
	t.Helper()
	ctxDir := t.TempDir()
	blob := make([]byte, size)
	rand.Read(blob)
	if err := os.WriteFile(filepath.Join(ctxDir, "blob"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	df := "FROM " + tb.ShellImage + "\nCOPY blob /blob\n"
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`name: bigstream
image: {dockerfile: %s, context: %s}
gpu: {vendor: none}
container: {network: host}
distribution: stream
benchmarks:
  - {name: echo, command: ["/bin/sh", "-c", "echo performance: 1 x"], timeout: 5m}
`, filepath.Join(ctxDir, "Dockerfile"), ctxDir)
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf, size
}

// One slow engine (rank 1's, reading its load at 2 MiB/s) paces the whole chain without
// deadlock: the job succeeds, every node runs rank 0's image, and the stream took at least
// as long as that engine needed for the image (nothing was buffered without bound ahead
// of it: a rank holds a few MiB of frames, not the image).
func TestStreamSlowEngineBackPressure(t *testing.T) {
	tb := testbed.Require(t)
	base := tb.FreshDir(t)
	mf, size := bigStreamManifest(t, tb, 16<<20)
	key := manifestKey(t, mf)
	removeByKey(t, tb, key)
	t.Cleanup(func() { removeByKey(t, tb, key) })
	const rate = 2 << 20
	px := testbed.StartEngineProxy(t, tb.Sockets[tb.Nodes[1]], testbed.LoadFault{BytesPerSecond: rate})
	if err := os.WriteFile(filepath.Join(base, tb.Nodes[1]+".docker_host"), []byte(px.Host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, log, err := runPerNodeJob(t, tb, base, mf, "e2e-stream-slow")
	if err != nil {
		t.Fatalf("job %s with one slow engine: %v\n%s", id, err, log)
	}
	var ids []string
	for i, n := range tb.Nodes {
		s := readStatus(t, filepath.Join(base, n), id, fmt.Sprintf("%d-%s", i, n))
		if s.Outcome != runner.OutcomeSuccess {
			t.Errorf("%s: %s: %s", n, s.Outcome, s.Error)
		}
		ids = append(ids, s.ImageID)
	}
	if ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("the nodes ran %v", ids)
	}
	if got := px.LoadBytes.Load(); got < int64(size) {
		t.Errorf("rank 1's engine read %d bytes of its load, less than the %d-byte layer", got, size)
	}
	// Rank 0's send ends when rank 1 has acknowledged the whole image, which it can only
	// do after its engine (at 2 MiB/s) has read nearly all of it: at least size/rate less
	// the frames a rank may hold (well under 8 MiB).
	m := regexp.MustCompile(`msg="image streamed to the other nodes" rank=0 .* seconds=([0-9.]+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("rank 0 did not log the stream's end:\n%s", log)
	}
	secs, _ := strconv.ParseFloat(m[1], 64)
	min := float64(size-8<<20) / rate
	t.Logf("rank 0 sent the image in %.1f s; the slow engine needs at least %.1f s for it", secs, min)
	if secs < min {
		t.Errorf("rank 0 finished sending in %.1f s, before the slow engine could have read the image (%.1f s): something buffered it whole", secs, min)
	}
}
