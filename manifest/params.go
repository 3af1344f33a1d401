package manifest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/manifest/document"
)

// {{name}} in a benchmark's command, env values and results is replaced by the variant's
// value of the parameter name. Only a name between the braces (spaces around it allowed)
// is a placeholder: other text in double braces, such as a Go template's {{.Field}} in a
// command, is kept as written.
var placeholderRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}`) })

// placeholder is one {{name}} in a field of a benchmark as written.
type placeholder struct {
	path, name string
}

// placeholders finds every {{name}} in the benchmarks' command, env values and results.
func (r *resolver) placeholders(bs []BenchmarkSpec) []placeholder {
	var out []placeholder
	find := func(fp, s string) {
		for _, m := range placeholderRE().FindAllStringSubmatch(s, -1) {
			out = append(out, placeholder{fp, m[1]})
		}
	}
	for i, b := range bs {
		fp := document.Index("benchmarks", i)
		for j, w := range b.Command {
			find(document.Index(fp+".command", j), w)
		}
		for _, k := range sortedKeys(b.Env) {
			find(document.Join(fp+".env", k), b.Env[k])
		}
		find(fp+".results", b.Results)
	}
	return out
}

// placeholdersKnown checks that every variant has a value for every placeholder.
func (r *resolver) placeholdersKnown(phs []placeholder, e *Experiment) bool {
	ok := true
	for _, ph := range phs {
		if !paramNameRE().MatchString(ph.name) {
			r.p.Add(ph.path, "{{%s}} cannot be a parameter: a name is a letter or _, then letters, digits and _ (the experiment's parameters: %s)", ph.name, strings.Join(e.Params, ", "))
			ok = false
			continue
		}
		var lack []string
		for _, v := range e.Variants {
			if _, has := v.Param(ph.name); !has {
				lack = append(lack, v.ID)
			}
		}
		switch {
		case len(lack) == 0:
		case len(lack) == len(e.Variants):
			r.p.Add(ph.path, "{{%s}} is not a parameter of the experiment (its parameters: %s); add it to experiment.matrix, or fix the name", ph.name, orNone(e.Params))
			ok = false
		default:
			more := ""
			if len(lack) > 3 {
				more = fmt.Sprintf(" and %d more", len(lack)-3)
				lack = lack[:3]
			}
			r.p.Add(ph.path, "{{%s}} has no value in variant %s%s (an include entry that became a variant of its own lacks it): give it %s in that entry", ph.name, strings.Join(quoteAll(lack), ", "), more, ph.name)
			ok = false
		}
	}
	return ok
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = document.Quote(s)
	}
	return out
}

// Substitute replaces every {{name}} in s by its value in params; a name without a value
// is kept as written (Resolve has refused such a manifest already).
func Substitute(s string, params []Param) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return placeholderRE().ReplaceAllStringFunc(s, func(m string) string {
		name := placeholderRE().FindStringSubmatch(m)[1]
		for _, p := range params {
			if p.Name == name {
				return p.Value
			}
		}
		return m
	})
}

// substituteSpec is a benchmark as written with a variant's values in its command, env
// values and results.
func substituteSpec(b BenchmarkSpec, params []Param) BenchmarkSpec {
	if b.Command != nil {
		cmd := make([]string, len(b.Command))
		for i, w := range b.Command {
			cmd[i] = Substitute(w, params)
		}
		b.Command = cmd
	}
	if b.Env != nil {
		env := make(map[string]string, len(b.Env))
		for k, v := range b.Env {
			env[k] = Substitute(v, params)
		}
		b.Env = env
	}
	b.Results = Substitute(b.Results, params)
	return b
}
