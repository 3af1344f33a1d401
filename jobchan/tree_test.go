package jobchan

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestTreeTopology(t *testing.T) {
	cfg := Config{World: 20, FanOut: 4}
	if got := cfg.children(0); !equalInts(got, []int{1, 5, 9, 13, 17}) {
		t.Errorf("rank 0's children %v", got)
	}
	if got := cfg.children(17); !equalInts(got, []int{18, 19}) {
		t.Errorf("relay 17's children %v", got)
	}
	for r, want := range map[int]int{1: 0, 2: 1, 4: 1, 5: 0, 8: 5, 19: 17} {
		if got := cfg.Parent(r); got != want {
			t.Errorf("parent of %d: %d, want %d", r, got, want)
		}
	}
	flat := Config{World: 65}
	if flat.tree() || len(flat.children(0)) != 64 || flat.Parent(64) != 0 || flat.IsRelay(1) {
		t.Error("64 workers should connect to rank 0 directly")
	}
	big := Config{World: 4096}
	if n := len(big.children(0)); n != 64 {
		t.Errorf("rank 0 of 4,096 ranks has %d children, want 64", n)
	}
	if n := len(big.children(1)); n != 63 {
		t.Errorf("a relay of 4,096 ranks has %d children, want 63", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// startTree starts rank 0 and every worker of a job in relayed groups of fanOut.
func startTree(t *testing.T, ctx context.Context, world, fanOut int, heartbeat time.Duration) (*Leader, []*Worker) {
	t.Helper()
	cfg := testConfig(world, nil)
	cfg.FanOut, cfg.Heartbeat = fanOut, heartbeat
	l, ws := joinTree(t, ctx, cfg)
	t.Cleanup(func() {
		for _, w := range ws[1:] {
			w.Close()
		}
		l.Close()
	})
	return l, ws
}

// joinTree starts rank 0 and ranks 1..World-1 in this process, each finding its parent
// (rank 0 or its relay) by the address the parent published; ws[0] is nil.
func joinTree(tb testing.TB, ctx context.Context, cfg Config) (*Leader, []*Worker) {
	tb.Helper()
	var mu sync.Mutex
	addrs := map[int]string{}
	cfg.Publish = func(rank int, addr string) { mu.Lock(); addrs[rank] = addr; mu.Unlock() }
	l, err := Listen(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	addrs[0] = l.Addr
	hint := func(rank int) string { mu.Lock(); defer mu.Unlock(); return addrs[rank] }
	ws := make([]*Worker, cfg.World)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, relays := range []bool{true, false} { // relays first: their groups connect to them
		for r := 1; r < cfg.World; r++ {
			if cfg.IsRelay(r) != relays {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				c := cfg
				c.Rank = r
				w, err := Join(ctx, c, hint)
				if err != nil {
					tb.Errorf("rank %d: %v", r, err)
					return
				}
				ws[r] = w
			}()
		}
		wg.Wait()
	}
	if tb.Failed() {
		l.Close()
		tb.FailNow()
	}
	return l, ws
}

// In a tree (20 ranks, groups of 4): rank 0 holds only the relays' connections, a phase is
// released to every rank with rank 0's data, and a member's failure reaches rank 0 through
// its relay, whole, and aborts every rank.
func TestTreePhasesAndFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, ws := startTree(t, ctx, 20, 4, 0)
	if got := l.Connected(); !equalInts(got, []int{1, 5, 9, 13, 17}) {
		t.Errorf("rank 0 is connected to %v, want the relays only", got)
	}
	errs := make(chan error, len(ws))
	for _, w := range ws[1:] {
		go func() {
			data, err := w.Wait(ctx, "image")
			if err == nil && data["imageId"] != "sha256:abc" {
				err = errors.New("wrong data: " + data["imageId"])
			}
			errs <- err
		}()
	}
	if err := l.Release(ctx, "image", map[string]string{"imageId": "sha256:abc"}); err != nil {
		t.Fatal(err)
	}
	for range ws[1:] {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	if err := ws[7].Fail("failed benchmark b: exited with code 1", 3); err != nil {
		t.Fatal(err)
	}
	const want = "rank 7 (n8) failed benchmark b: exited with code 1"
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("rank 0 never heard of the failure")
	}
	if ae := l.Err().(*AbortError); ae.Reason != want || ae.ExitCode() != 3 {
		t.Fatalf("rank 0: %v", ae)
	}
	for r, w := range ws[1:] {
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatalf("rank %d never heard of the abort", r+1)
		}
		var ae *AbortError
		if !errors.As(w.Err(), &ae) || ae.Reason != want || ae.ExitCode() != 3 {
			t.Errorf("rank %d: %v", r+1, w.Err())
		}
	}
}

// A member that dies is lost to its relay, which takes it to rank 0; a relay that dies is
// lost to rank 0 and to its group. Either way every rank ends.
func TestTreeLostMemberAndRelay(t *testing.T) {
	for _, c := range []struct {
		name   string
		victim int
		want   string
	}{{"member", 6, "lost rank 6 (n7)"}, {"relay", 5, "lost rank 5 (n6)"}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, ws := startTree(t, ctx, 12, 4, 100*time.Millisecond)
			if sub := ws[c.victim].sub; sub != nil {
				killLeader(sub)
			}
			kill(ws[c.victim])
			select {
			case <-l.Done():
			case <-ctx.Done():
				t.Fatal("rank 0 never noticed")
			}
			if !strings.Contains(l.Err().Error(), c.want) {
				t.Errorf("rank 0: %v", l.Err())
			}
			for r, w := range ws[1:] {
				if r+1 == c.victim {
					continue
				}
				select {
				case <-w.Done():
				case <-ctx.Done():
					t.Fatalf("rank %d never ended", r+1)
				}
				if !strings.Contains(w.Err().Error(), c.want) && !strings.Contains(w.Err().Error(), "lost rank 5 (n6) at") {
					t.Errorf("rank %d: %v", r+1, w.Err())
				}
			}
		})
	}
}

// buildLoadWorkers builds the loadworkers helper (without -race: 4,095 workers need more
// goroutines than the race detector allows).
func buildLoadWorkers(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loadworkers")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/benchctl/benchctl/jobchan/internal/loadworkers")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building loadworkers: %v\n%s", err, out)
	}
	return bin
}

// startLoadWorkers runs ranks 1..world-1 in a child process; closing the returned writer
// ends them.
func startLoadWorkers(t testing.TB, bin string, cfg Config, addr string, args ...string) (*bufio.Scanner, func()) {
	t.Helper()
	out, _, _, stop := startLoadWorkersIO(t, bin, cfg, addr, args...)
	return out, stop
}

// startLoadWorkersIO is startLoadWorkers that also gives the child's standard input (for
// loadworkers -go) and its process id.
func startLoadWorkersIO(t testing.TB, bin string, cfg Config, addr string, args ...string) (*bufio.Scanner, io.Writer, int, func()) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-leader", addr, "-world", strconv.Itoa(cfg.World), "-job", cfg.Job,
		"-heartbeat", cfg.heartbeat().String()}, args...)...)
	cmd.Env = append(os.Environ(), "JOBCHAN_LOAD_SECRET="+string(cfg.Secret))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return bufio.NewScanner(stdout), stdin, cmd.Process.Pid, func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // still joining: it reads stdin only after
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// A 4,096-node job meets although rank 0's process may open only 4,096 files: rank 0
// holds 64 relay connections, not 4,095. (Flat, rank 0 would need 4,095 connections plus
// its own files, over the limit.)
func TestTreeMeetsUnderAFileLimitOf4096(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4,095 workers")
	}
	const world = 4096
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	if saved.Max < 2*world+512 {
		t.Skipf("the workers' process needs %d open files, the hard limit is %d", 2*world+512, saved.Max)
	}
	bin := buildLoadWorkers(t)
	lowered := saved
	lowered.Cur = world
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := testConfig(world, nil)
	cfg.LogEvery = time.Hour
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, stop := startLoadWorkers(t, bin, cfg, l.Addr, "-phase", "meet")
	defer stop()
	if err := l.Release(ctx, "meet", map[string]string{"imageId": "sha256:abc"}); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Connected()); n != 64 {
		t.Errorf("rank 0 holds %d connections, want 64", n)
	}
	if !out.Scan() || out.Text() != "released 4095" {
		t.Fatalf("the workers say %q", out.Text())
	}
}
