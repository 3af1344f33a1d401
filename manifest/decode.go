package manifest

import (
	"context"
	"fmt"
	"github.com/benchctl/benchctl/internal/editdist"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// nodeDecoder is implemented by field types with their own syntax (a mount as a string or a
// mapping, a GPU count as a number or "all", …).
type nodeDecoder interface {
	decodeNode(d *decoder, n *Node, path string)
}

// decoder fills Go values from a Node tree strictly: unknown fields, wrong types and bad
// scalars are problems; decoding continues after each one so that all are reported.
type decoder struct {
	p   *problems
	ctx context.Context // nil: never ends
	n   int             // values decoded, to look at ctx every ctxEvery
}

var nodeDecoderType = reflect.TypeFor[nodeDecoder]()

func (d *decoder) decode(n *Node, v reflect.Value, path string) {
	if d.n++; d.n%ctxEvery == 0 && d.ctx != nil && d.ctx.Err() != nil {
		return // Parse returns the context's cause
	}
	if _, ok := d.p.pos[path]; !ok {
		d.p.pos[path] = n.Line
	}
	if v.CanAddr() && v.Addr().Type().Implements(nodeDecoderType) {
		v.Addr().Interface().(nodeDecoder).decodeNode(d, n, path)
		return
	}
	if v.Kind() == reflect.Pointer {
		if n.Kind == NullNode {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Slice:
		if n.Kind == NullNode {
			return
		}
		if n.Kind != SeqNode {
			if n.Kind == ScalarNode && n.Tag == TagStr && strings.HasSuffix(path, ".command") {
				d.p.at(n.Line, path, "must be a list (exec form), got the string %s: write [%s] — benchctl never runs a shell string; use [\"sh\", \"-c\", \"...\"] if you need a shell", quote(n.Value), quoteFields(n.Value))
				return
			}
			d.p.at(n.Line, path, "must be a list, got %s", n.describe())
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Items), len(n.Items))
		for i, it := range n.Items {
			d.decode(it, s.Index(i), index(path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != ScalarNode || n.Tag != TagStr {
			hint := ""
			if n.Kind == ScalarNode && (n.Tag == TagInt || n.Tag == TagFloat || n.Tag == TagBool) {
				hint = fmt.Sprintf(" (quote it: \"%s\")", n.Value)
			}
			d.p.at(n.Line, path, "must be a string, got %s%s", n.describe(), hint)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != ScalarNode || n.Tag != TagBool {
			d.p.at(n.Line, path, "must be true or false, got %s", n.describe())
			return
		}
		v.SetBool(strings.EqualFold(n.Value, "true"))
	case reflect.Int, reflect.Int64:
		i, ok := intValue(n)
		if !ok {
			d.p.at(n.Line, path, "must be a whole number, got %s", n.describe())
			return
		}
		v.SetInt(i)
	default:
		d.p.at(n.Line, path, "cannot be decoded (internal: unsupported type %s)", v.Type())
	}
}

// intValue reads an integer scalar (decimal, 0x, 0o) that fits in 53 bits.
func intValue(n *Node) (int64, bool) {
	if n.Kind != ScalarNode || n.Tag != TagInt {
		return 0, false
	}
	// Plain decimal only: "010" is not 8 and "0x10" not 16 here; such a number is refused
	// (with the message of the field) rather than read as something the user did not mean.
	s := strings.TrimPrefix(n.Value, "+")
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil || i > 1<<53 || i < -(1<<53) {
		return 0, false
	}
	return i, true
}

func (d *decoder) decodeMap(n *Node, v reflect.Value, path string) {
	if n.Kind == NullNode {
		return
	}
	if n.Kind != MapNode {
		d.p.at(n.Line, path, "must be a mapping of names to values, got %s", n.describe())
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Keys))
	for i, k := range n.Keys {
		kp := join(path, k.Value)
		d.p.pos[kp] = k.Line
		ev := reflect.New(v.Type().Elem()).Elem()
		it := n.Items[i]
		if ev.Kind() == reflect.String && it.Kind == ScalarNode {
			// Values of name->string maps (env, buildArgs) are text: a YAML 8 or true is
			// kept exactly as written.
			ev.SetString(it.Value)
		} else {
			if ev.Kind() == reflect.String && it.Kind == NullNode {
				d.p.at(it.Line, kp, "has no value (write \"\" for an empty string)")
				continue
			}
			d.decode(it, ev, kp)
		}
		m.SetMapIndex(reflect.ValueOf(k.Value), ev)
	}
	v.Set(m)
}

// fieldName is the schema name of a struct field: its json tag.
func fieldName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

func (d *decoder) decodeStruct(n *Node, v reflect.Value, path string) {
	if n.Kind == NullNode {
		return
	}
	if n.Kind != MapNode {
		d.p.at(n.Line, path, "must be a mapping, got %s", n.describe())
		return
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		if name := fieldName(t.Field(i)); name != "" && name != "-" {
			fields[name] = i
			names = append(names, name)
		}
	}
	for i, k := range n.Keys {
		kp := join(path, k.Value)
		fi, ok := fields[k.Value]
		if !ok && path == "" && strings.HasPrefix(k.Value, "x-") {
			continue // a top-level extension key: a place for YAML anchors, ignored
		}
		if !ok {
			msg := "unknown field"
			if s := suggest(k.Value, names); s != "" {
				msg += ", did you mean " + quote(s) + "?"
			}
			sort.Strings(names)
			d.p.at(k.Line, kp, "%s (allowed here: %s)", msg, strings.Join(names, ", "))
			continue
		}
		d.p.pos[kp] = k.Line
		d.decode(n.Items[i], v.Field(fi), kp)
	}
}

// suggest returns the allowed name closest to a misspelt one, if it is close.
func suggest(got string, allowed []string) string {
	best, bestD := "", math.MaxInt
	runes := utf8.RuneCountInString(got)
	for _, a := range allowed {
		if strings.EqualFold(a, got) {
			return a
		}
		if d := runes - utf8.RuneCountInString(a); d > 3 || d < -3 {
			continue // at least that many edits apart (and a long key costs no quadratic distance)
		}
		if dd := editdist.Distance(strings.ToLower(got), strings.ToLower(a)); dd < bestD {
			best, bestD = a, dd
		}
	}
	if bestD <= 2 || (bestD <= 3 && len(got) > 6) {
		return best
	}
	return ""
}

func reflectValue(ptr any) reflect.Value { return reflect.ValueOf(ptr).Elem() }

// quoteFields renders a command string as a suggested list, split at spaces.
func quoteFields(s string) string {
	f := strings.Fields(s)
	for i := range f {
		f[i] = strconv.Quote(f[i])
	}
	return strings.Join(f, ", ")
}
