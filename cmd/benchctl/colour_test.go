package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Statuses are coloured on a terminal only (SUCCESS, done and improved green; FAILURE,
// failed, lost and regressed red; SKIPPED grey), never in a pipe, with NO_COLOR set (any
// value but empty) or with TERM=dumb; the colour codes wrap the word after the padding, so
// the columns are where they are without colour.
// sinceStart is a running job's duration in `jobs` (now less its start): two runs of the
// command a second apart differ in it, so the outputs are compared without it.
var sinceStart = regexp.MustCompile(`\b\d+h\d+m\d+s\b`)

func TestStatusColour(t *testing.T) {
	shared := fixtures(t)
	dir := t.TempDir()
	base, worse := filepath.Join(dir, "base.csv"), filepath.Join(dir, "new.csv")
	os.WriteFile(base, []byte("model,metric,performance\na,x,100\nb,x,100\n"), 0o644)
	os.WriteFile(worse, []byte("model,metric,performance\na,x,80\nb,x,120\n"), 0o644)
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	green, red, reset := "\x1b[32m", "\x1b[31m", "\x1b[0m"
	for _, c := range []struct {
		args []string
		want []string // lines of the coloured table, in full
	}{
		{[]string{"collect", "500", "--shared-dir", shared}, []string{
			"train      train_0  samples_per_second  -    60           2/2    60   60.5    61   1.2%  " + green + "SUCCESS" + reset + "  0-r1    "}},
		{[]string{"collect", "600", "--partial", "--shared-dir", shared}, []string{
			"train      train_0  samples_per_second  -    70           1/2    70   70      70   0.0%  " + red + "FAILURE" + reset + "  0-s1    partial: 1 of 2 nodes still running"}},
		{[]string{"jobs", "--shared-dir", shared}, []string{
			"500 (attempt 1)  requeued  " + green + "done" + reset + "     2 ",
			"400              missing   " + red + "failed" + reset + "   3 ",
			"600              running   running  2 "}},
		{[]string{"compare", base, worse}, []string{
			"a      x       -    100   80   -20.00%  higher (guessed)  5%         " + red + "regressed" + reset + "  single-trial",
			"b      x       -    100   120  +20.00%  higher (guessed)  5%         " + green + "improved" + reset + "   single-trial"}},
	} {
		_, plain, _ := runMode(t, false, c.args...)
		plain = sinceStart.ReplaceAllString(plain, "<running for>")
		if sgr.MatchString(plain) {
			t.Errorf("%v: coloured in a pipe:\n%q", c.args, plain)
		}
		_, tty, _ := runMode(t, true, c.args...)
		tty = sinceStart.ReplaceAllString(tty, "<running for>")
		if got := sgr.ReplaceAllString(tty, ""); got != plain {
			t.Errorf("%v: on a terminal, less its colour, is not the pipe's output:\n%s\nwant\n%s", c.args, got, plain)
		}
		for _, w := range c.want {
			if !strings.Contains(tty, w) {
				t.Errorf("%v: on a terminal, no %q in\n%q", c.args, w, tty)
			}
		}
		for _, env := range [][2]string{{"NO_COLOR", "1"}, {"NO_COLOR", "0"}, {"TERM", "dumb"}} {
			t.Run(env[0]+"="+env[1], func(t *testing.T) {
				t.Setenv(env[0], env[1])
				if _, got, _ := runMode(t, true, c.args...); sinceStart.ReplaceAllString(got, "<running for>") != plain {
					t.Errorf("%v: on a terminal with %s=%s:\n%q\nwant\n%q", c.args, env[0], env[1], got, plain)
				}
			})
		}
	}
}
