package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrintErrorJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	for _, c := range []struct {
		err  error
		code int
		want string
	}{
		{fmt.Errorf("loading manifest m.yaml: %w", usagef("use --log-format text or json", `invalid --log-format "xml"`)), 4,
			`{"time":"2026-01-02T03:04:05.6Z","level":"ERROR","msg":"loading manifest m.yaml: invalid --log-format \"xml\"","hint":"use --log-format text or json","exitCode":4}`},
		{errors.New("node 2 failed"), 1,
			`{"time":"2026-01-02T03:04:05.6Z","level":"ERROR","msg":"node 2 failed","exitCode":1}`},
	} {
		var b bytes.Buffer
		printErrorJSON(&b, c.err, c.code, at)
		if got := b.String(); got != c.want+"\n" {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestPrintErrorText(t *testing.T) {
	var b bytes.Buffer
	printError(&b, fmt.Errorf("loading manifest m.yaml: %w", usagef("fix it", "line 4: bad")))
	printError(&b, usagef("", "invalid --output %q", "xml"))
	if want := "benchctl: error: loading manifest m.yaml: line 4: bad\nhint: fix it\nbenchctl: error: invalid --output \"xml\"\n"; b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// An error that quotes what a node or container wrote reaches the terminal escaped, its
// lines kept.
func TestPrintErrorEscapesControls(t *testing.T) {
	var b bytes.Buffer
	printError(&b, errors.New("rank 1 failed: \x1b]0;pwned\a\x1b[2J\u202etxt.exe\nsecond line"))
	want := "benchctl: error: rank 1 failed: \\x1b]0;pwned\\x07\\x1b[2J\\u202etxt.exe\nsecond line\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// With --log-format json every line on stderr is a JSON record, the final error included,
// wherever on the command line the flag is and whether or not cobra got as far as parsing it;
// without it the error is text, as before.
func TestFinalErrorFollowsLogFormat(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml")
	for _, c := range []struct {
		args     []string
		msg      string
		hint     bool
		exitCode int
	}{
		{[]string{"--log-format", "json", "validate", "--manifest", missing}, "no such file", false, 4},
		{[]string{"validate", "--manifest", missing, "--log-format=json"}, "no such file", false, 4},
		{[]string{"--log-format", "json", "frob"}, `unknown command "frob"`, true, 4},
		{[]string{"frob", "--log-format=json"}, `unknown command "frob"`, true, 4},
		{[]string{"validate", "--bogus", "--log-format", "json"}, "unknown flag: --bogus", true, 4},
	} {
		code, out, errs := run(t, c.args...)
		if code != c.exitCode || out != "" {
			t.Errorf("%v: exit %d, stdout %q", c.args, code, out)
		}
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Errorf("%v: a line on stderr is not JSON: %q", c.args, l)
			}
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"])); err != nil {
			t.Errorf("%v: time: %v", c.args, err)
		}
		msg, _ := rec["msg"].(string)
		if rec["level"] != "ERROR" || !strings.Contains(msg, c.msg) || rec["exitCode"] != float64(c.exitCode) || (rec["hint"] != nil) != c.hint {
			t.Errorf("%v: final record %v", c.args, rec)
		}
	}
	code, _, errs := run(t, "--log-format", "text", "frob")
	if want := "benchctl: error: unknown command \"frob\" for \"benchctl\"\nhint: run 'benchctl --help' or 'benchctl COMMAND --help'\n"; code != 4 || errs != want {
		t.Errorf("text: exit %d\n got %q\nwant %q", code, errs, want)
	}
}
