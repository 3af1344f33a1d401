package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// No flag's help says its default twice: pflag appends "(default X)" to a usage text that
// already says "(default: the newest)" when the flag's zero value is not its default.
func TestFlagHelpSaysDefaultOnce(t *testing.T) {
	seen := 0
	walkCommands(conventionsRoot(), func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalFlags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				one := pflag.NewFlagSet("", pflag.ContinueOnError)
				one.AddFlag(f)
				line := one.FlagUsages()
				seen++
				if n := strings.Count(strings.ToLower(line), "default"); n > 1 {
					t.Errorf("%s --%s says default %d times:%s", c.CommandPath(), f.Name, n, line)
				}
			})
		}
	})
	if seen < 50 {
		t.Fatalf("only %d flags checked", seen)
	}
}

// collect --attempt's help, exactly, as `benchctl collect --help` prints it.
func TestAttemptHelp(t *testing.T) {
	code, out, errs := run(t, "collect", "--help")
	want := "      --attempt int         attempt to collect: 0 is the first run, n the n-th requeue (default newest)\n"
	if code != 0 || errs != "" || !strings.Contains(out, want) {
		t.Errorf("exit %d, stderr %q; no line %q in\n%s", code, errs, want, out)
	}
}

// A wrong --attempt is invalid input that says what to give.
func TestAttemptValue(t *testing.T) {
	for _, v := range []string{"-2", "x", "", "99999999999999999999"} {
		code, out, errs := run(t, "collect", "1", "--shared-dir", t.TempDir(), "--attempt", v)
		want := "benchctl: error: invalid --attempt \"" + v + "\"\nhint: give a number from 0, or newest\n"
		if code != exitInvalid || out != "" || errs != want {
			t.Errorf("--attempt %s: exit %d, stdout %q\n got %q\nwant %q", v, code, out, errs, want)
		}
	}
}
