package main

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flag vocabulary every command shares (docs/cli-conventions.md): -o/--output FORMAT,
// flags that take one of a few values, and old spellings that keep working for one release
// with a warning on stderr.

// choice is the value of a flag that takes one of a few values: it is checked when the
// command line is parsed (a wrong one is invalid input, exit 4, naming the values), and the
// same values are what the flag completes to and what its help lists.
type choice struct {
	flag   string // as messages name it: "--output"
	p      *string
	values []string
	fold   bool              // case does not matter (--gpu-vendor AMD); the value is kept in lower case
	old    map[string]string // an old spelling -> the value it stands for (-o text -> table)
	// other takes a value that is none of values, as an old meaning of the flag (collect's
	// -o PATH): it says what is deprecated, or false when the value means nothing either.
	other func(v string) (warning string, ok bool)
	hint  string // said after the values when a value is wrong

	warning string // a value given was an old spelling: what to write instead
}

func (c *choice) String() string      { return *c.p }
func (c *choice) Type() string        { return "string" }
func (c *choice) deprecation() string { return c.warning }

func (c *choice) Set(v string) error {
	w := v
	if c.fold {
		w = strings.ToLower(v)
	}
	if slices.Contains(c.values, w) {
		*c.p = w
		return nil
	}
	if now, ok := c.old[w]; ok {
		*c.p = now
		c.warning = deprecation(shortest(c.flag)+" "+v, shortest(c.flag)+" "+now)
		return nil
	}
	if c.other != nil {
		if warning, ok := c.other(v); ok {
			c.warning = warning
			return nil
		}
	}
	hint := "use " + c.flag + " " + orList(c.values)
	if c.hint != "" {
		hint += "; " + c.hint
	}
	return usagef(hint, "invalid %s %q", c.flag, v)
}

// shortest is how a warning names a flag: "-o" for --output, else the long name.
func shortest(flag string) string {
	if flag == "--output" {
		return "-o"
	}
	return flag
}

// choiceFlag defines --name (and -short, unless "") on fs, taking one of values, def at
// first; cmd completes it with values. The usage should name the values (the conventions
// test checks that it does).
func choiceFlag(cmd *cobra.Command, fs *pflag.FlagSet, p *string, name, short, def, usage string, values ...string) *choice {
	*p = def
	c := &choice{flag: "--" + name, p: p, values: values}
	fs.VarP(c, name, short, usage)
	_ = cmd.RegisterFlagCompletionFunc(name, completeWords(values...))
	return c
}

// outputFlag defines -o, --output FORMAT, the one flag for how a command prints what it
// prints: formats[0] is the default (table, where the command has a table). -o text, the
// old name of table, still works with a warning.
func outputFlag(cmd *cobra.Command, p *string, formats ...string) *choice {
	c := choiceFlag(cmd, cmd.Flags(), p, "output", "o", formats[0], "output `format`: "+orList(formats), formats...)
	if slices.Contains(formats, "table") {
		c.old = map[string]string{"text": "table"}
	}
	return c
}

// completeWords completes a flag from a fixed list: the words that start with what is typed.
func completeWords(words ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, w := range words {
			if strings.HasPrefix(w, toComplete) {
				out = append(out, w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// deprecation is the warning for an old spelling that a command line used.
func deprecation(old, now string) string {
	return old + " is deprecated and will be removed in the next release; write " + now + " instead"
}

// deprecate hides flag name of cmd, an old spelling that keeps working for one release;
// when a command line uses it, a warning on stderr says what to write instead (now, given
// the value). Not pflag's MarkDeprecated: cobra prints that warning on stdout.
func deprecate(cmd *cobra.Command, name string, now func(value string) string) {
	f := cmd.Flags().Lookup(name)
	f.Hidden = true
	f.Value = &oldSpelling{Value: f.Value, flag: f, now: now}
}

// oldSpelling is the value of a deprecated flag: the flag's own value, and a warning once set.
type oldSpelling struct {
	pflag.Value
	flag    *pflag.Flag
	now     func(value string) string
	warning string
}

func (o *oldSpelling) deprecation() string { return o.warning }

func (o *oldSpelling) Set(v string) error {
	if err := o.Value.Set(v); err != nil {
		return err
	}
	old := "--" + o.flag.Name
	if o.flag.Shorthand != "" {
		old = "-" + o.flag.Shorthand
	}
	if o.flag.NoOptDefVal == "" { // a flag that takes a value (not a bool)
		old += " " + v
	}
	o.warning = deprecation(old, o.now(v))
	return nil
}

// warnDeprecated logs a warning for each old spelling on cmd's command line (after logging
// is set up, so that it follows --log-format).
func warnDeprecated(cmd *cobra.Command) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if d, ok := f.Value.(interface{ deprecation() string }); ok && d.deprecation() != "" {
			slog.Warn(d.deprecation())
		}
	})
}

// checkOutput checks a flag's value against the allowed ones when the flag is not a
// choiceFlag (--log-format, read before logging is set up; or values known only at run
// time): invalid input (exit 4) naming them.
func checkOutput(flag, got string, allowed ...string) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	return usagef("use "+flag+" "+orList(allowed), "invalid %s %q", flag, got)
}

// newestInt is an int flag whose -1 means "the newest" (collect --attempt): its help says
// "(default newest)" once, where an IntVar with default -1 and the words in its usage said
// "(default: the newest) (default -1)". It takes a number from 0, or "newest" (or -1, as
// before).
type newestInt struct {
	flag string // as messages name it: "--attempt"
	p    *int
}

func (v newestInt) String() string {
	if *v.p < 0 {
		return "newest"
	}
	return strconv.Itoa(*v.p)
}

func (v newestInt) Type() string { return "int" }

func (v newestInt) Set(s string) error {
	if s == "newest" || s == "-1" {
		*v.p = -1
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return usagef("give a number from 0, or newest", "invalid %s %q", v.flag, s)
	}
	*v.p = n
	return nil
}
