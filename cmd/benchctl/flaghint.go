package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchctl/benchctl/internal/editdist"
	"github.com/benchctl/benchctl/internal/exitcode"
)

// flagError is every command's FlagErrorFunc: a command line whose flags do not parse is
// invalid input (exit 4) with a hint. A flag the command does not have gets the closest one
// it has ("did you mean --manifest?"), or the commands that have it; a choice flag's wrong
// value keeps its own message and hint (invalid --output "xml").
func flagError(cmd *cobra.Command, err error) error { return flagErrorIn(nil)(cmd, err) }

// flagErrorIn is flagError for the command line args, which a hint may quote (submit's
// --gres gpu:8 becomes --sbatch-arg=--gres=gpu:8).
func flagErrorIn(args []string) func(*cobra.Command, error) error {
	return func(cmd *cobra.Command, err error) error { return flagErrorArgs(cmd, err, args) }
}

func flagErrorArgs(cmd *cobra.Command, err error, args []string) error {
	var usage *exitcode.UsageError
	if errors.As(err, &usage) {
		return usage
	}
	hint := fmt.Sprintf("run '%s --help'", cmd.CommandPath())
	var missing *pflag.NotExistError
	if errors.As(err, &missing) {
		if s := suggestFlag(cmd, missing.GetSpecifiedName(), missing.GetSpecifiedShortnames(), args); s != "" {
			hint = s
		}
	}
	return &exitcode.UsageError{Msg: err.Error(), HintMsg: hint}
}

// suggestFlag says what the user may have meant by a flag cmd does not have: name is the
// long name as typed, or for a short flag the letter, with shorts the letters after its dash;
// args is the command line, where the flag's value is looked for (nil: not known).
func suggestFlag(cmd *cobra.Command, name, shorts string, args []string) string {
	if shorts != "" {
		return suggestShort(cmd, name, shorts)
	}
	name, _, _ = strings.Cut(name, "=")
	if s := closestFlags(cmd, name); len(s) > 0 {
		return "did you mean " + orList(s) + "?"
	}
	if others := commandsWithFlag(cmd, func(f *pflag.Flag) bool { return f.Name == name }); len(others) > 0 {
		return fmt.Sprintf("--%s is a flag of %s, not of '%s'", name, orList(others), cmd.CommandPath())
	}
	if cmd.Flags().Lookup("sbatch-arg") != nil { // submit: --gres=gpu:8 is sbatch's
		return "other sbatch options go through --sbatch-arg, one per option: --sbatch-arg=--" + name + "=" + flagValueIn(args, name)
	}
	return fmt.Sprintf("run '%s --help' for its flags", cmd.CommandPath())
}

// flagValueIn is the value of the flag --name on the command line args (--name=V, or
// --name V), or "VALUE" when it has none there.
func flagValueIn(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			return args[i+1]
		}
	}
	return "VALUE"
}

// suggestShort: a long flag written with one dash (-manifest), a short flag in the other
// case (-n for -N), a short flag of another command, or the command's own short flags.
func suggestShort(cmd *cobra.Command, letter, shorts string) string {
	if shorts[0:1] == letter && len(shorts) > 1 {
		word, _, _ := strings.Cut(shorts, "=")
		if s := closestFlags(cmd, word); len(s) > 0 {
			return "did you mean " + orList(s) + "? (a long flag takes two dashes)"
		}
	}
	var own []string
	var near string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Shorthand == "" || f.ShorthandDeprecated != "" {
			return
		}
		own = append(own, fmt.Sprintf("-%s (--%s)", f.Shorthand, f.Name))
		if strings.EqualFold(f.Shorthand, letter) {
			near = fmt.Sprintf("-%s (--%s)", f.Shorthand, f.Name)
		}
	})
	if near != "" {
		return "did you mean " + near + "?"
	}
	if others := commandsWithFlag(cmd, func(f *pflag.Flag) bool { return f.Shorthand == letter }); len(others) > 0 {
		return fmt.Sprintf("-%s is a flag of %s, not of '%s'", letter, orList(others), cmd.CommandPath())
	}
	if len(own) == 0 {
		return fmt.Sprintf("'%s' has no short flags; run '%s --help' for its flags", cmd.CommandPath(), cmd.CommandPath())
	}
	return fmt.Sprintf("the short flags of '%s' are %s", cmd.CommandPath(), strings.Join(own, ", "))
}

// closestFlags are cmd's visible flags ("--manifest") nearest to name in edit distance
// (typos, swapped letters, a missing dash), or the one flag name is the start of; none when
// nothing is near.
func closestFlags(cmd *cobra.Command, name string) []string {
	if name == "" {
		return nil
	}
	limit := min(max(len(name)/3, 1), 3)
	best, bestD := []string(nil), limit+1
	var prefixed []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if len(name) >= 2 && strings.HasPrefix(f.Name, name) {
			prefixed = append(prefixed, "--"+f.Name)
		}
		switch d := editdist.Distance(strings.ToLower(name), f.Name); {
		case d < bestD:
			best, bestD = []string{"--" + f.Name}, d
		case d == bestD:
			best = append(best, "--"+f.Name)
		}
	})
	if len(best) == 0 && len(prefixed) == 1 {
		return prefixed
	}
	sort.Strings(best)
	return best
}

// commandsWithFlag names the other commands of cmd's tree that have a visible flag that
// matches ("'benchctl build'"), at most three.
func commandsWithFlag(cmd *cobra.Command, match func(*pflag.Flag) bool) []string {
	var out []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		if c != cmd {
			found := false
			c.LocalFlags().VisitAll(func(f *pflag.Flag) { found = found || (!f.Hidden && match(f)) })
			if found {
				out = append(out, "'"+c.CommandPath()+"'")
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(cmd.Root())
	if len(out) > 3 {
		out = append(out[:3], "others")
	}
	return out
}
