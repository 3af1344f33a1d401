package layering

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/benchctl/benchctl"

// rooms place every package of the module (by the longest folder prefix) on a floor of
// DESIGN's layering: cmd (cobra's wiring) -> commands (what each command does) ->
// {scheduler, runner, results, models} -> distribution ->
// {image, runtime, fanout, jobchan} -> {jobdir, manifest, gpu, host}. A package imports
// packages of its own room, or of rooms on lower floors, and internal/ (the basement,
// beneath every floor); never a sibling's or anything above. The scheduler room is two
// parts: its vocabulary (scheduler: the Node a run is handed, the interface) sits beside
// the runtimes, where runner can be handed it; each scheduler sits beside runner.
var rooms = []struct {
	prefix string
	floor  int
}{
	{"cmd/benchctl", 5}, // wiring only: cobra commands, flags, help, exit codes
	// the remote-launch agent in the benchmark's container: the standard library and
	// internal/agentwire alone (TestTheAgentIsSmall), so that it builds static and runs in any image
	{"cmd/benchctl-agent", 5},
	{"commands", 4}, // each command's work (xRun), given its options; never sees cobra

	{"runner", 3},
	{"results", 3},
	{"models", 3},
	{"scheduler/slurm", 3},
	{"scheduler/local", 3},
	{"scheduler/kubernetes", 3}, // a job as an Indexed Job of one pod per node

	{"distribution", 2},
	{"diagnostics", 2}, // what a failed benchmark leaves: looks through the runtime, writes the node folder

	{"image", 1},
	{"fanout", 1},
	{"jobchan", 1},
	{"workload", 1},  // where a benchmark's process lives: the Runtime interface; workload/engine is Docker's and Podman's
	{"scheduler", 1}, // the seam's vocabulary (scheduler.Node, Scheduler); scheduler/schedulertest is its suite

	{"jobdir", 0},
	{"manifest", 0},
	{"gpu", 0},
	{"host", 0},
	{"logscan", 0}, // log verdicts: text in, verdicts out

	{"internal", -1},
}

// outside are the module's folders that are not part of the product's layering: the
// end-to-end tests and their testbed, and the benchmarks under bench/, which may use
// anything.
var outside = []string{"tests", "bench"}

// mobyClient may be imported only by these rooms: image's builders and engines, and the
// runtime room's engine adapter (workload/engine). internal/testutil is the unit tests'
// helper (a fake engine's types); no product code imports it.
var mobyClient = map[string]bool{"image": true, "workload/engine": true, "internal/testutil": true}

type pkg struct {
	ImportPath string
	Imports    []string
	GoFiles    []string
	Dir        string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
		// go test caches a result by the files the test opened, not by what `go list`
		// read: open each package's folder and files so that an edit reruns the test.
		if _, err := os.ReadDir(p.Dir); err != nil {
			t.Fatal(err)
		}
		for _, f := range p.GoFiles {
			countLines(t, filepath.Join(p.Dir, f))
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: the test is not looking at the module", len(pkgs))
	}
	return pkgs
}

// roomOf is the room of a module path relative to the module ("runner", "scheduler/slurm"),
// by the longest prefix; ok is false for a package outside the layering, and for one that
// no room holds (which the test reports).
func roomOf(rel string) (room string, floor int, placed, ok bool) {
	for _, o := range outside {
		if rel == o || strings.HasPrefix(rel, o+"/") {
			return "", 0, true, false
		}
	}
	best := -1
	for i, r := range rooms {
		if (rel == r.prefix || strings.HasPrefix(rel, r.prefix+"/")) && (best < 0 || len(r.prefix) > len(rooms[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return "", 0, false, false
	}
	return rooms[best].prefix, rooms[best].floor, true, true
}

// Every package imports only its own room, lower floors and internal/: DESIGN's layering.
func TestPackagesImportDownwardOnly(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		room, floor, placed, ok := roomOf(rel)
		if !placed {
			t.Errorf("%s is in no room of the layering: place it in rooms (internal/layering) and in docs/ARCHITECTURE.md", rel)
			continue
		}
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			if (strings.HasPrefix(imp, "github.com/spf13/cobra") || strings.HasPrefix(imp, "github.com/spf13/pflag")) && room != "cmd/benchctl" {
				t.Errorf("%s imports %s: only cmd/benchctl wires commands; a command's work takes its options, never cobra's", rel, imp)
			}
			if strings.HasPrefix(imp, "github.com/moby/moby/client") && !mobyClient[room] && !mobyClient[rel] {
				t.Errorf("%s imports %s: only the engine adapter and image's builders speak moby's client", rel, imp)
			}
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			irel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			iroom, ifloor, iplaced, iok := roomOf(irel)
			switch {
			case !iplaced || !iok:
				t.Errorf("%s imports %s, which is outside the layering", rel, irel)
			case iroom == room, ifloor == -1:
			case ifloor >= floor:
				t.Errorf("%s (floor %d) imports %s (%s, floor %d): packages import downward only (DESIGN's layering)", rel, floor, irel, iroom, ifloor)
			}
		}
	}
}

// The rule is checked on the rule's own examples: a sibling, an upward import, a room's
// own sub-package, the basement.
func TestTheRoomsOfTheRule(t *testing.T) {
	for rel, want := range map[string]string{
		"runner": "runner 3", "runner/x": "runner 3", "scheduler": "scheduler 1", "scheduler/slurm": "scheduler/slurm 3",
		"scheduler/schedulertest": "scheduler 1", "models/allreduce": "models 3", "internal/safefile": "internal -1",
		"jobdir/jobdirtest": "jobdir 0", "manifest/internal/schemagen": "manifest 0",
		"cmd/benchctl": "cmd/benchctl 5", "commands": "commands 4", "cmd/benchctl-agent": "cmd/benchctl-agent 5",
	} {
		room, floor, _, ok := roomOf(rel)
		if got := fmt.Sprintf("%s %d", room, floor); !ok || got != want {
			t.Errorf("%s: %s, want %s", rel, got, want)
		}
	}
	if _, _, placed, _ := roomOf("somethingnew"); placed {
		t.Error("a new top folder is placed without being named")
	}
}

// maxLines is the most lines of non-test Go a package may have: past it, a room holds two
// jobs.
const maxLines = 5000

// No non-test package is over 5,000 lines (a room with two jobs).
func TestNoPackageOutgrowsItsRoom(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if _, _, _, ok := roomOf(rel); !ok {
			continue
		}
		lines := 0
		for _, f := range p.GoFiles {
			lines += countLines(t, filepath.Join(p.Dir, f))
		}
		if lines > maxLines {
			t.Errorf("%s is %d lines of non-test Go, over %d: split it into rooms of one job each (docs/ARCHITECTURE.md)", rel, lines, maxLines)
		}
	}
}

func countLines(t *testing.T, file string) int {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// The agent runs in images benchctl does not make: it needs nothing but the standard
// library and its protocol (no cgo, no module of another project).
func TestTheAgentIsSmall(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/cmd/benchctl-agent")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != module+"/cmd/benchctl-agent" && p != module+"/internal/agentwire" {
			t.Errorf("the agent depends on %s: only the standard library and internal/agentwire", p)
		}
	}
}

// Every benchctl command pays for the init of every package linked in, `benchctl run` on
// every node included: client-go's generated clientset and its scheme register about fifty
// API groups (8-10 ms at every start, docs/PERFORMANCE.md). scheduler/kubernetes asks its
// few groups through REST clients of a scheme of its own; nothing may link the rest back.
func TestNoClientsetInBenchctl(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/cmd/benchctl")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	groups := 0
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "k8s.io/client-go/kubernetes") {
			t.Errorf("benchctl links %s (client-go's clientset: every API group's init at every start)", p)
		}
		if strings.HasPrefix(p, "k8s.io/api/") {
			groups++
		}
	}
	if groups > 6 {
		t.Errorf("benchctl links %d of k8s.io/api's groups; it asks about core, batch and rbac", groups)
	}
}
