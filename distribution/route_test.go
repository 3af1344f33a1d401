package distribution

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// distRun is rank 0 of a job of world nodes with the manifest's distribution dist, its node
// context from source, and no job channel.
func distRun(t *testing.T, dist, source string, world int) *leader {
	t.Helper()
	hosts := make([]string, world)
	for i := range hosts {
		hosts[i] = "h" + string(rune('a'+i%26))
	}
	shared := t.TempDir()
	return &leader{Options: Options{Manifest: &manifest.Manifest{Distribution: dist}, SharedDir: shared,
		Node: Node{JobID: "77", World: world, Hosts: hosts, Source: source}, Dir: jobdir.Layout{Shared: shared}.Job("77", 0),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
}

func TestChooseViaWithoutAuto(t *testing.T) {
	imgs := func() []Image {
		return []Image{{Ref: "built", ID: "sha256:1", Key: "k1"}, {Ref: "pre/loaded:1", ID: "sha256:2"},
			{Ref: "pulled:1", ID: "sha256:3", Key: "k3", publish: &publishLater{}}}
	}
	for _, c := range []struct {
		dist, source string
		want         []string
	}{
		{manifest.DistributionCache, "slurm", []string{ViaCache, ViaRef, ViaCache}},
		{manifest.DistributionStream, "slurm", []string{ViaStream, ViaStream, ViaStream}},
		{manifest.DistributionRegistry, "slurm", []string{ViaRef, ViaRef, ViaRef}},
		// auto without Slurm cannot stream (no node list): as cache
		{"", "env", []string{ViaCache, ViaRef, ViaCache}},
		{manifest.DistributionAuto, "env", []string{ViaCache, ViaRef, ViaCache}},
	} {
		r := distRun(t, c.dist, c.source, 3)
		list := imgs()
		if err := r.chooseVia(context.Background(), list); err != nil {
			t.Fatalf("%s/%s: %v", c.dist, c.source, err)
		}
		for i := range list {
			if list[i].Via != c.want[i] {
				t.Errorf("%s/%s: image %s goes by %q, want %q", c.dist, c.source, list[i].Ref, list[i].Via, c.want[i])
			}
		}
	}
	if r := distRun(t, "", "slurm", 2); !r.mayStream() || distRun(t, "", "env", 2).mayStream() || distRun(t, "cache", "slurm", 2).mayStream() {
		t.Error("mayStream: auto under Slurm may stream; auto elsewhere and cache may not")
	}
}

// Rank 0 sees the job folder as every node does only when every worker's node folder is in
// it; one missing (a per-node shared dir) names the ranks, at most five of them.
func TestSharedWithAll(t *testing.T) {
	saved := sharedLookAgain
	sharedLookAgain = 100 * time.Millisecond
	defer func() { sharedLookAgain = saved }()

	r := distRun(t, "", "slurm", 3)
	for rank := 0; rank < 3; rank++ {
		os.MkdirAll(r.Dir.Node(rank, r.Node.Hosts[rank]).Path, 0o755)
	}
	if ok, why := r.sharedWithAll(context.Background()); !ok {
		t.Errorf("all folders there, but not shared: %s", why)
	}
	os.RemoveAll(r.Dir.Node(2, r.Node.Hosts[2]).Path)
	ok, why := r.sharedWithAll(context.Background())
	if ok || !strings.Contains(why, "ranks 2 (hc)") {
		t.Errorf("rank 2's folder missing: %v %q", ok, why)
	}

	big := distRun(t, "", "slurm", 2000)
	start := time.Now()
	ok, why = big.sharedWithAll(context.Background())
	if ok || !strings.Contains(why, "and 1994 more") || strings.Count(why, "(") != 5 {
		t.Errorf("2000 ranks, none there: %v %q", ok, why)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	// A cancelled job does not wait the look-again time.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, _ := big.sharedWithAll(ctx); ok {
		t.Error("shared after cancel")
	}
}
