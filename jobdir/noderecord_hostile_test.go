//go:build linux

package jobdir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

func TestReadNodeRecordRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	var r safefile.Reader
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"version":1,"job":"7"}`)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var nr *safefile.NotRegularError
	for _, p := range []string{link, fifo} {
		if _, err := jobdir.ReadNodeRecord(&r, p); !errors.As(err, &nr) {
			t.Errorf("%s: %v, want a *NotRegularError", p, err)
		}
	}
	cases := map[string]string{
		"malformed.json": `{"version":1,"job":`,
		"newer.json":     `{"version":99}`,
		"none.json":      `{"job":"7"}`,
		"deep.json":      strings.Repeat("[", 200) + strings.Repeat("]", 200),
		"wrongtype.json": `{"version":1,"machine":{"memoryBytes":"lots"}}`,
	}
	for name, data := range cases {
		if _, err := jobdir.ReadNodeRecord(&r, write(name, data)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	big := write("big.json", `{"version":1,"benchctl":"`+strings.Repeat("x", jobdir.MaxNodeRecordSize)+`"}`)
	var tl *safefile.TooLargeError
	if _, err := jobdir.ReadNodeRecord(&r, big); !errors.As(err, &tl) {
		t.Errorf("a 4 MiB record: %v", err)
	}
	if _, err := jobdir.ReadNodeRecord(&r, good); err != nil {
		t.Errorf("good: %v", err)
	}
}
