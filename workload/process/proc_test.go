//go:build linux

package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/proctable"
)

// fakeProc is a process table of a test's making: pid -> stat line and environment.
func fakeProc(t *testing.T, procs map[string][2]string) {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		d := filepath.Join(root, pid)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "stat"), []byte(p[0]), 0o644)
		os.WriteFile(filepath.Join(d, "environ"), []byte(p[1]), 0o644)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte("sleep\x00600\x00"), 0o644)
	}
	old := proctable.Root
	proctable.Root = root
	t.Cleanup(func() { proctable.Root = old })
}

// What /proc holds is read as hostile: a command name with blanks and parentheses, a
// garbled label set (found by name, matching only an empty filter), an environment larger
// than the bound (read up to it), a stat line cut short, a group member that is no leader,
// and processes without the marker.
func TestScanReadsTheProcessTableAsHostile(t *testing.T) {
	huge := strings.Repeat("X=", proctable.MaxEnviron) // the marker lies past the bound: not read
	fakeProc(t, map[string][2]string{
		"10":  {"10 (a) b) (c) S 1 10 10", MarkerName + "=odd\x00" + MarkerLabels + `={"io.benchctl.job":"7"}` + "\x00"},
		"11":  {"11 (x) S 1 11 11", MarkerName + "=garbled\x00" + MarkerLabels + "={not json\x00"},
		"12":  {"12 (y) S 1 12 12", huge + "\x00" + MarkerName + "=past\x00"},
		"13":  {"13 (z) S", MarkerName + "=cut\x00"},
		"14":  {"14 (w) S 10 10 10", MarkerName + "=member\x00"},
		"15":  {"15 (v) S 1 15 15", "PATH=/bin\x00"},
		"bad": {"x", "y"},
	})
	found, err := scan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, f := range found {
		got[f.name] = f.labels
	}
	if len(got) != 2 || got["odd"]["io.benchctl.job"] != "7" || got["garbled"] != nil {
		t.Fatalf("found %v, want odd (its labels) and garbled (none)", got)
	}
	members := groupMembers(10)
	if len(members) != 2 || members[0].cmdline != "sleep 600" {
		t.Fatalf("group 10: %+v", members)
	}
	if !hasLabels(got["garbled"], nil) || hasLabels(got["garbled"], map[string]string{"io.benchctl.job": "7"}) {
		t.Fatal("a garbled label set matched a job's filter")
	}
}
