//go:build linux

package cleanup

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/jobdir"
)

// outsideEntries lists what landed in a folder cleanup must never write to.
func outsideEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// The job's owner swaps the node folder for a link to a protected folder between
// cleanup's read of status.json and its write (renameat2 RENAME_EXCHANGE, as fast as the
// kernel allows): the root epilog must never write through the link.
func TestCleanupRaceWithASwappedNodeFolder(t *testing.T) {
	shared := t.TempDir()
	protected := t.TempDir() // a folder the job's owner could not write
	writeStatus(t, shared, "77", 0, "n1", OutcomeRunning)
	nodes := jobdir.Layout{Shared: shared}.Job("77", 0).Nodes()
	node, link := filepath.Join(nodes, "0-n1"), filepath.Join(nodes, "0-n1.swap")
	if err := os.Symlink(protected, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, node, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
		t.Skip("no renameat2 RENAME_EXCHANGE here:", err)
	}
	unix.Renameat2(unix.AT_FDCWD, node, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) // back

	realDir, err := os.Open(node) // the real folder, whatever its name becomes
	if err != nil {
		t.Fatal(err)
	}
	defer realDir.Close()
	running, err := os.ReadFile(filepath.Join(node, jobdir.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, node, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	runs := 0
	for time.Now().Before(deadline) && len(outsideEntries(t, protected)) == 0 {
		runs++
		// Put a running status back into the real folder, wherever it is now: through its
		// descriptor, since its name may be the link at any moment.
		if b, err := os.ReadFile(filepath.Join("/proc/self/fd", strconv.Itoa(int(realDir.Fd())), jobdir.StatusFile)); err == nil && !strings.Contains(string(b), `"outcome": "running"`) {
			if err := atomicfile.WriteFileAt(realDir, jobdir.StatusFile, running, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, _ = Cleanup(context.Background(), CleanupOptions{Job: "77", SharedDir: shared, Host: "n1", Outcome: OutcomeLost})
	}
	stop.Store(true)
	wg.Wait()
	if got := outsideEntries(t, protected); len(got) > 0 {
		t.Fatalf("cleanup wrote %v into the folder the node folder was swapped for (after %d runs, %d swaps)", got, runs, swaps.Load())
	}
	t.Logf("%d cleanups, %d swaps, nothing written outside", runs, swaps.Load())
}

// The node folder already is a link to a folder elsewhere that holds a running status of
// this host: cleanup neither reads through the link nor writes there, and says why.
func TestCleanupRefusesALinkedNodeFolder(t *testing.T) {
	shared := t.TempDir()
	elsewhere := t.TempDir()
	writeStatus(t, shared, "77", 1, "n2", OutcomeRunning) // makes jobs/77/nodes
	planted := writeStatus(t, elsewhere, "x", 0, "n1", OutcomeRunning)
	before, _ := os.ReadFile(planted)
	if err := os.Symlink(filepath.Dir(planted), jobdir.Layout{Shared: shared}.Job("77", 0).NodeNamed("0-n1").Path); err != nil {
		t.Fatal(err)
	}
	res, err := Cleanup(context.Background(), CleanupOptions{Job: "77", SharedDir: shared, Host: "n1", Outcome: OutcomeLost})
	after, _ := os.ReadFile(planted)
	if string(after) != string(before) {
		t.Fatal("cleanup wrote through the linked node folder")
	}
	if ents := outsideEntries(t, filepath.Dir(planted)); len(ents) != 1 {
		t.Fatalf("files appeared in the linked folder: %v", ents)
	}
	if res == nil || len(res.Marked) != 0 {
		t.Fatalf("marked %v", res)
	}
	if err != nil {
		t.Fatalf("a linked folder of someone else is skipped, not a failure: %v", err)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "0-n1") || !strings.Contains(res.Skipped[0], "symbolic link") {
		t.Fatalf("skipped = %q, want the node folder named as a link", res.Skipped)
	}
}

// The job folder itself is a link (to another user's job folder, say): nothing is written.
func TestCleanupRefusesALinkedJobFolder(t *testing.T) {
	shared := t.TempDir()
	elsewhere := t.TempDir()
	planted := writeStatus(t, elsewhere, "77", 0, "n1", OutcomeRunning)
	before, _ := os.ReadFile(planted)
	os.MkdirAll(jobdir.Layout{Shared: shared}.Jobs(), 0o755)
	if err := os.Symlink(jobdir.Layout{Shared: elsewhere}.Job("77", 0).Path, jobdir.Layout{Shared: shared}.Job("77", 0).Path); err != nil {
		t.Fatal(err)
	}
	res, err := Cleanup(context.Background(), CleanupOptions{Job: "77", SharedDir: shared, Host: "n1", Outcome: OutcomeLost})
	if after, _ := os.ReadFile(planted); string(after) != string(before) {
		t.Fatal("cleanup wrote through the linked job folder")
	}
	if err != nil || res == nil || len(res.Marked) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "symbolic link") {
		t.Fatalf("res %+v, err %v", res, err)
	}
}

// Root (the epilog) refuses a job folder owned by someone else: it would write where that
// user decides. The job's own cleanup step (the sbatch script's) records it instead.
func TestCleanupAsRootRefusesAnotherUsersFolders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the folder away")
	}
	shared := t.TempDir()
	p := writeStatus(t, shared, "77", 0, "n1", OutcomeRunning)
	before, _ := os.ReadFile(p)
	for _, d := range []string{jobdir.Layout{Shared: shared}.Job("77", 0).Path, jobdir.Layout{Shared: shared}.Job("77", 0).Nodes(), filepath.Dir(p)} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Cleanup(context.Background(), CleanupOptions{Job: "77", SharedDir: shared, Host: "n1", Outcome: OutcomeLost})
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Fatal("root wrote into another user's job folder")
	}
	if err != nil || len(res.Marked) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "owned by uid 65534") {
		t.Fatalf("res %+v, err %v", res, err)
	}
}
