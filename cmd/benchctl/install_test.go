package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// gen-docs man (make man) writes a page for every command users see, each a section 1 page.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := run(t, "gen-docs", "man", dir); code != 0 {
		t.Fatalf("gen-docs man: exit %d\n%s%s", code, out, errs)
	}
	n := 0
	walkCommands(conventionsRoot(), func(c *cobra.Command) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: no man page: %v", c.CommandPath(), err)
			return
		}
		page := strings.TrimSuffix(name, ".1")
		if !strings.Contains(string(b), "\n"+`.TH "`+strings.ToUpper(page)+`" "1"`) || !strings.Contains(string(b), ".SH NAME\n"+page+" - ") {
			t.Errorf("%s: not its section 1 page:\n%.300s", name, b)
		}
		n++
	})
	if n < 20 {
		t.Errorf("only %d pages checked", n)
	}
}

// make install puts the binary in $(DESTDIR)$(PREFIX)/bin and the man pages in
// $(DESTDIR)$(PREFIX)/share/man/man1, PREFIX /usr/local unless given.
func TestMakeInstallPaths(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no make on CI: %v", err)
		}
		t.Skipf("no make: %v", err)
	}
	for _, c := range []struct {
		vars []string
		bin  string
		man  string
	}{
		{nil, "/usr/local/bin", "/usr/local/share/man/man1"},
		{[]string{"PREFIX=/opt/bc", "DESTDIR=/tmp/stage"}, "/tmp/stage/opt/bc/bin", "/tmp/stage/opt/bc/share/man/man1"},
	} {
		cmd := exec.Command("make", append([]string{"-n", "-C", "../..", "install"}, c.vars...)...)
		for _, e := range os.Environ() { // only the command line's PREFIX and DESTDIR
			if !strings.HasPrefix(e, "PREFIX=") && !strings.HasPrefix(e, "DESTDIR=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n install %v: %v\n%s", c.vars, err, out)
		}
		for _, want := range []string{
			"install -d " + c.bin + " " + c.man,
			"install -m 0755 bin/benchctl " + c.bin + "/benchctl",
			"install -m 0755 bin/benchctl-agent " + c.bin + "/benchctl-agent", // the MPI launchers find it beside benchctl
			"install -m 0644 man/*.1 " + c.man + "/",
			"gen-docs man man", // make man first
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("make -n install %v: no %q in\n%s", c.vars, want, out)
			}
		}
	}
}
