package manifest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/manifest/document"
)

// Lookup returns the value of an environment variable and whether it is set.
type Lookup func(name string) (string, bool)

var varNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// expansion is the result of expanding one value.
type expansion struct {
	value   string
	secrets []string // secret variables the value used
	vars    []string // every variable the value used
}

// Expand replaces ${VAR}, ${VAR:-default}, ${VAR-default} and ${VAR:?message} with values
// from lookup; "$$" is a literal "$". A "$" not followed by "{" or "$" stays as it is.
// secret reports whether a variable is listed under `secrets`.
func Expand(s string, lookup Lookup, secret func(string) bool) (string, []string, error) {
	e, err := expand(s, lookup, secret, nil)
	return e.value, e.secrets, err
}

// expand is Expand; refuse, when not nil, vets every variable before it is read: an error
// from it stops the expansion.
func expand(s string, lookup Lookup, secret func(string) bool, refuse func(name string) error) (expansion, error) {
	if !strings.Contains(s, "$") {
		return expansion{value: s}, nil
	}
	var b strings.Builder
	var out expansion
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
			continue
		case '{':
		default:
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return out, fmt.Errorf("unterminated ${ in %s (close it with }, or write $$ for a literal $)", document.Quote(s))
		}
		expr := s[i+2 : i+2+end]
		i += 2 + end + 1
		name, op, arg := expr, "", ""
		for _, o := range []string{":-", ":?", "-", "?"} {
			if k := strings.Index(expr, o); k >= 0 && (op == "" || k < strings.Index(expr, op)) {
				name, op, arg = expr[:k], o, expr[k+len(o):]
			}
		}
		if !varNameRE().MatchString(name) {
			return out, fmt.Errorf("${%s}: %s is not a variable name (letters, digits and _, not starting with a digit)", expr, document.Quote(name))
		}
		if strings.Contains(arg, "${") {
			return out, fmt.Errorf("${%s}: nested ${...} in a default is not supported", expr)
		}
		if refuse != nil {
			if err := refuse(name); err != nil {
				return out, err
			}
		}
		v, set := lookup(name)
		out.vars = append(out.vars, name)
		if secret != nil && secret(name) {
			out.secrets = append(out.secrets, name)
		}
		switch op {
		case "":
			if !set && (secret == nil || !secret(name)) {
				// An unset secret is warned about where `secrets` is checked; here it is empty.
				return out, fmt.Errorf("${%s} is not set (set it, or give a default: ${%s:-value})", name, name)
			}
		case ":-":
			if !set || v == "" {
				v = arg
			}
		case "-":
			if !set {
				v = arg
			}
		case ":?", "?":
			if !set || (op == ":?" && v == "") {
				msg := arg
				if msg == "" {
					msg = "is required"
				}
				return out, fmt.Errorf("${%s}: %s", name, msg)
			}
		}
		b.WriteString(v)
	}
	out.value = b.String()
	return out, nil
}
