package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/tests/testbed"
)

// TestSmokeSlurmSeesOneEnginePerNode: an sbatch job over every node runs `benchctl version`
// through srun; each task must reach its own node's Docker Engine (a different engine ID).
func TestSmokeSlurmSeesOneEnginePerNode(t *testing.T) {
	tb := testbed.Require(t)
	bin := tb.Benchctl(t)
	n := len(tb.Nodes)
	work, err := os.MkdirTemp(tb.SharedDir, "smoke-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	script := filepath.Join(work, "job.sh")
	body := "#!/bin/sh\nexec srun \"$BENCHCTL_BIN\" version --output json\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(work, "out.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sbatch", "--wait", "-N", strconv.Itoa(n), "--ntasks-per-node=1",
		"-p", tb.Partition, "-o", out, "-J", "benchctl-smoke", script)
	cmd.Env = append(tb.Env(), "BENCHCTL_BIN="+bin)
	cmd.Dir = work
	if msg, err := cmd.CombinedOutput(); err != nil {
		data, _ := os.ReadFile(out)
		t.Fatalf("sbatch: %v\n%s\njob output:\n%s", err, msg, data)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ids, hosts := map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	lines := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		lines++
		var rep struct {
			Client struct{ Version string }
			Engine *struct {
				ID, Host, Version string
			}
			EngineError string
		}
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatalf("bad json %q: %v", line, err)
		}
		if rep.Engine == nil {
			t.Fatalf("a task reached no engine: %s", rep.EngineError)
		}
		ids[rep.Engine.ID] = true
		hosts[rep.Engine.Host] = true
	}
	if lines != n || len(ids) != n || len(hosts) != n {
		t.Fatalf("want %d tasks on %d different engines, got %d lines, ids %v, hosts %v\n%s", n, n, lines, ids, hosts, data)
	}
}
