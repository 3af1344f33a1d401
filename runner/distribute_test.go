package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/fanout"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/manifest"
)

func distRun(t *testing.T, dist, source string, world int) *nodeRun {
	t.Helper()
	hosts := make([]string, world)
	for i := range hosts {
		hosts[i] = "h" + string(rune('a'+i%26))
	}
	n := Node{JobID: "77", World: world, Hosts: hosts, Host: hosts[0], Source: source}
	shared := t.TempDir()
	return &nodeRun{o: Options{Manifest: &manifest.Manifest{Distribution: dist}, SharedDir: shared},
		node: n, dir: n.Dir(shared), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestChooseViaWithoutAuto(t *testing.T) {
	imgs := func() []resolvedImage {
		return []resolvedImage{{Ref: "built", ID: "sha256:1", Key: "k1"}, {Ref: "pre/loaded:1", ID: "sha256:2"},
			{Ref: "pulled:1", ID: "sha256:3", Key: "k3", publish: &image.LeaderResult{Unpublished: true}}}
	}
	for _, c := range []struct {
		dist, source string
		want         []string
	}{
		{manifest.DistributionCache, "slurm", []string{viaCache, viaRef, viaCache}},
		{manifest.DistributionStream, "slurm", []string{viaStream, viaStream, viaStream}},
		{manifest.DistributionRegistry, "slurm", []string{viaRef, viaRef, viaRef}},
		// auto without Slurm cannot stream (no node list): as cache
		{"", "env", []string{viaCache, viaRef, viaCache}},
		{manifest.DistributionAuto, "env", []string{viaCache, viaRef, viaCache}},
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
		os.MkdirAll(r.dir.Node(rank, r.node.Hosts[rank]).Path, 0o755)
	}
	if ok, why := r.sharedWithAll(context.Background()); !ok {
		t.Errorf("all folders there, but not shared: %s", why)
	}
	os.RemoveAll(r.dir.Node(2, r.node.Hosts[2]).Path)
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

// The dry run on a node of a several-node job says how the other nodes would get each
// image; on a one-node job it says nothing of it.
func TestPlanSaysHowImagesReachTheNodes(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(dir+"/Dockerfile", []byte("FROM scratch\n"), 0o644)
	slurm := map[string]string{"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "3",
		"SLURM_STEP_NUM_NODES": "3", "SLURM_STEP_NODELIST": "gpu-[07-09]", "SLURMD_NODENAME": "gpu-07"}
	env := map[string]string{"NODE_RANK": "0", "NNODES": "3", "MASTER_ADDR": "gpu-07", "MASTER_PORT": "29500", "BENCHCTL_JOB_ID": "j77"}
	for _, c := range []struct {
		dist, image string
		lookup      map[string]string
		want        string
	}{
		{"", "{dockerfile: Dockerfile}", slurm, "auto: rank 0 streams it to the other nodes as it saves it"},
		{"", "{dockerfile: Dockerfile}", env, "auto, without Slurm's node list to stream along: the other nodes load it from the shared cache"},
		{"cache", "{dockerfile: Dockerfile}", slurm, "cache: the other nodes load it from the shared cache"},
		{"stream", "{ref: busybox}", slurm, "stream: rank 0 streams it"},
		{"", "{ref: busybox}", slurm, "auto: if rank 0 has to pull it, it streams it to the others"},
		{"registry", "{ref: busybox}", slurm, "registry: every node pulls it"},
		{"", "{dockerfile: Dockerfile}", nil, ""},
	} {
		body := "name: t\nimage: " + c.image + "\ngpu: {vendor: none}\nbenchmarks: [{name: b, command: [x]}]\n"
		if c.dist != "" {
			body += "distribution: " + c.dist + "\n"
		}
		m, _, err := manifest.Parse("m.yaml", dir+"/m.yaml", []byte(body), manifest.Options{Lookup: lookupOf(nil)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Plan(context.Background(), Options{Manifest: m, SharedDir: dir, Lookup: lookupOf(c.lookup)})
		if err != nil {
			t.Fatal(err)
		}
		got := p.Images[0].Distribution
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s (world %d): %q, want %q…", c.dist, c.image, p.Node.World, got, c.want)
		}
	}
}

// A stream that failed at another rank is reported naming that rank first: the first rank to
// report it may not be where it began (rank 2 sees its predecessor die before the job channel
// counts rank 1 lost).
func TestFailReasonNamesWhereTheStreamFailed(t *testing.T) {
	r := distRun(t, "", "slurm", 3)
	r.node.Rank = 2
	cut := fmt.Errorf("receiving image x: %w", &fanout.Error{Rank: 1, Seen: 2, Reason: "connection to rank 2 lost after 12 bytes: EOF"})
	if got := r.failReason(cut); !strings.HasPrefix(got, "saw the image stream fail at rank 1 (hb): receiving image x: image fan-out: rank 1:") {
		t.Errorf("%q", got)
	}
	own := &fanout.Error{Rank: 2, Seen: 2, Reason: "loading the image: refused"}
	if got := r.failReason(own); got != "failed: image fan-out: rank 2: loading the image: refused" {
		t.Errorf("%q", got)
	}
	// a rank out of the job's range (a malformed report) is not looked up
	if got := r.failReason(&fanout.Error{Rank: 2000000000, Seen: 2, Reason: "x"}); !strings.HasPrefix(got, "failed: ") {
		t.Errorf("%q", got)
	}
	if got := r.failReason(errors.New("disk full")); got != "failed: disk full" {
		t.Errorf("%q", got)
	}
}
