//go:build linux

package proctable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A made-up table read as hostile: a command with parentheses and blanks, a cut stat line,
// a state of two letters, a variable past MaxEnviron, a folder that is no process.
func TestAHostileTable(t *testing.T) {
	root := t.TempDir()
	for pid, files := range map[string]map[string]string{
		"7":    {"stat": "7 (my (odd) cmd) Z 1 7 7 0", "environ": "A=1\x00B=x=y\x00", "cmdline": "sh\x00-c\x00sleep 1\x00"},
		"8":    {"stat": "8 (cut) S", "environ": strings.Repeat("P", MaxEnviron) + "\x00A=late\x00"},
		"9":    {"stat": "9 (two) SZ 1 9 9"},
		"self": {"stat": "not a pid"},
	} {
		os.MkdirAll(filepath.Join(root, pid), 0o755)
		for f, body := range files {
			os.WriteFile(filepath.Join(root, pid, f), []byte(body), 0o644)
		}
	}
	old := Root
	Root = root
	defer func() { Root = old }()
	pids, err := Pids()
	if err != nil || len(pids) != 3 {
		t.Fatalf("pids %v, %v", pids, err)
	}
	if ppid, pgid, state, ok := Stat(7); !ok || ppid != 1 || pgid != 7 || state != 'Z' {
		t.Errorf("stat 7: %d %d %c %v", ppid, pgid, state, ok)
	}
	for _, pid := range []int{8, 9, 10} {
		if _, _, _, ok := Stat(pid); ok {
			t.Errorf("stat %d parsed", pid)
		}
	}
	if env := Getenv(7, "A", "B", "C"); len(env) != 2 || env["A"] != "1" || env["B"] != "x=y" {
		t.Errorf("environ 7: %v", env)
	}
	if env := Getenv(8, "A"); len(env) != 0 {
		t.Errorf("a variable past the bound was read: %v", env)
	}
	if c := Cmdline(7); c != "sh -c sleep 1" {
		t.Errorf("cmdline %q", c)
	}
}
