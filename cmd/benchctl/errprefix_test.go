package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/iostreams"
)

// runMode is run with stdout and stderr fixed as terminals (tty) or as pipes.
func runMode(t *testing.T, tty bool, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	s := iostreams.New(strings.NewReader(""), &out, &errb)
	s.SetStdoutTTY(tty)
	s.SetStderrTTY(tty)
	code := Execute(context.Background(), args, s)
	return code, out.String(), errb.String()
}

// Every final error starts "benchctl: error: ", also the invalid manifest, the invalid
// choice of a flag and the invalid input of --tags, whose messages start "invalid": the rest
// of the message and its hint are kept, in a terminal and in a pipe alike.
func TestOneErrorPrefix(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(bad, []byte("name: x\ngpu: {vendor: amdd}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "-m", bad},
			"benchctl: error: invalid manifest " + bad + ": 2 problems:\n" +
				"  " + bad + ":1: benchmarks: is required: list at least one benchmark (name and command), or import some with models: {catalog, tags}\n" +
				"  " + bad + ":2: gpu.vendor: \"amdd\" is not a GPU vendor, did you mean \"amd\"? (allowed: amd, nvidia, none, auto)\n"},
		{[]string{"validate", "-m", "m.yaml", "-o", "xml"},
			"benchctl: error: invalid --output \"xml\"\nhint: use --output yaml or json\n"},
		{[]string{"--log-level", "loud", "version"},
			"benchctl: error: invalid --log-level \"loud\"\nhint: use --log-level debug, info, warn or error\n"},
		{[]string{"run", "--dry-run", "--tags", "x"},
			"benchctl: error: invalid input: --tags: no models.json in " + dir + ": run in a MAD checkout, or give --manifest\n"},
	} {
		for _, tty := range []bool{true, false} {
			code, out, errs := runMode(t, tty, c.args...)
			if code != exitInvalid || out != "" || errs != c.want {
				t.Errorf("%v (tty %v): exit %d, stdout %q\n got %q\nwant %q", c.args, tty, code, out, errs, c.want)
			}
		}
	}
}
