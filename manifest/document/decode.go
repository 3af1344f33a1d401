package document

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/editdist"
)

// NodeDecoder is implemented by field types with their own syntax (a mount as a string or a
// mapping, a GPU count as a number or "all", …): DecodeNode reads n, written at path, and
// records what is wrong with it in d.Problems.
type NodeDecoder interface {
	DecodeNode(d *Decoder, n *Node, path string)
}

// Decoder fills Go values from a Node tree strictly: unknown fields, wrong types and bad
// scalars are problems; decoding continues after each one so that all are reported. A
// struct field is read from the key its json tag names (FieldName); a top-level key that
// starts with x- is ignored (a place for YAML anchors); a string where a command (a field
// path ending in .command) takes a list is refused with the list to write instead.
type Decoder struct {
	Problems *Problems
	Ctx      context.Context // nil: never ends; when it ends, decoding stops (the caller says so)
	n        int             // values decoded, to look at Ctx every CheckEvery
}

var nodeDecoderType = reflect.TypeFor[NodeDecoder]()

// Decode fills v (settable) from n, written at path ("" for the document's root).
func (d *Decoder) Decode(n *Node, v reflect.Value, path string) {
	if d.n++; d.n%CheckEvery == 0 && d.Ctx != nil && d.Ctx.Err() != nil {
		return // the caller returns the context's cause
	}
	d.Problems.SetLineOnce(path, n.Line)
	if v.CanAddr() && v.Addr().Type().Implements(nodeDecoderType) {
		v.Addr().Interface().(NodeDecoder).DecodeNode(d, n, path)
		return
	}
	if v.Kind() == reflect.Pointer {
		if n.Kind == NullNode {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.Decode(n, v.Elem(), path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.DecodeStruct(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.Slice:
		if n.Kind == NullNode {
			return
		}
		if n.Kind != SeqNode {
			if n.Kind == ScalarNode && n.Tag == TagStr && strings.HasSuffix(path, ".command") {
				d.Problems.At(n.Line, path, "must be a list (exec form), got the string %s: write [%s] — benchctl never runs a shell string; use [\"sh\", \"-c\", \"...\"] if you need a shell", Quote(n.Value), quoteFields(n.Value))
				return
			}
			d.Problems.At(n.Line, path, "must be a list, got %s", n.Describe())
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Items), len(n.Items))
		for i, it := range n.Items {
			d.Decode(it, s.Index(i), Index(path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != ScalarNode || n.Tag != TagStr {
			hint := ""
			if n.Kind == ScalarNode && (n.Tag == TagInt || n.Tag == TagFloat || n.Tag == TagBool) {
				hint = fmt.Sprintf(" (quote it: \"%s\")", n.Value)
			}
			d.Problems.At(n.Line, path, "must be a string, got %s%s", n.Describe(), hint)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != ScalarNode || n.Tag != TagBool {
			d.Problems.At(n.Line, path, "must be true or false, got %s", n.Describe())
			return
		}
		v.SetBool(strings.EqualFold(n.Value, "true"))
	case reflect.Int, reflect.Int64:
		i, ok := Int(n)
		if !ok {
			d.Problems.At(n.Line, path, "must be a whole number, got %s", n.Describe())
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, ok := Float(n)
		if !ok {
			d.Problems.At(n.Line, path, "must be a number (such as 12, 0.5 or 1e9), got %s", n.Describe())
			return
		}
		v.SetFloat(f)
	default:
		d.Problems.At(n.Line, path, "cannot be decoded (internal: unsupported type %s)", v.Type())
	}
}

// Float reads a number scalar written in plain decimal (an exponent allowed), finite: not
// .inf, .nan, hex or a number past float64.
func Float(n *Node) (float64, bool) {
	if n.Kind != ScalarNode || (n.Tag != TagInt && n.Tag != TagFloat) || !floatRE.MatchString(n.Value) {
		return 0, false
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	return f, err == nil
}

var floatRE = regexp.MustCompile(`^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)

// Int reads an integer scalar written in plain decimal that fits in 53 bits.
func Int(n *Node) (int64, bool) {
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

func (d *Decoder) decodeMap(n *Node, v reflect.Value, path string) {
	if n.Kind == NullNode {
		return
	}
	if n.Kind != MapNode {
		d.Problems.At(n.Line, path, "must be a mapping of names to values, got %s", n.Describe())
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Keys))
	for i, k := range n.Keys {
		kp := Join(path, k.Value)
		d.Problems.SetLine(kp, k.Line)
		ev := reflect.New(v.Type().Elem()).Elem()
		it := n.Items[i]
		if ev.Kind() == reflect.String && it.Kind == ScalarNode {
			// Values of name->string maps (env, buildArgs) are text: a YAML 8 or true is
			// kept exactly as written.
			ev.SetString(it.Value)
		} else {
			if ev.Kind() == reflect.String && it.Kind == NullNode {
				d.Problems.At(it.Line, kp, "has no value (write \"\" for an empty string)")
				continue
			}
			d.Decode(it, ev, kp)
		}
		m.SetMapIndex(reflect.ValueOf(k.Value), ev)
	}
	v.Set(m)
}

// FieldName is the schema name of a struct field: its json tag.
func FieldName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// DecodeStruct fills the struct v from the mapping n, written at path, field by field, even
// where v's type is a NodeDecoder: its DecodeNode reads its mapping form so.
func (d *Decoder) DecodeStruct(n *Node, v reflect.Value, path string) {
	if n.Kind == NullNode {
		return
	}
	if n.Kind != MapNode {
		d.Problems.At(n.Line, path, "must be a mapping, got %s", n.Describe())
		return
	}
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		if name := FieldName(t.Field(i)); name != "" && name != "-" {
			fields[name] = i
			names = append(names, name)
		}
	}
	for i, k := range n.Keys {
		kp := Join(path, k.Value)
		fi, ok := fields[k.Value]
		if !ok && path == "" && strings.HasPrefix(k.Value, "x-") {
			continue // a top-level extension key: a place for YAML anchors, ignored
		}
		if !ok {
			msg := "unknown field"
			if s := Suggest(k.Value, names); s != "" {
				msg += ", did you mean " + Quote(s) + "?"
			}
			sort.Strings(names)
			d.Problems.At(k.Line, kp, "%s (allowed here: %s)", msg, strings.Join(names, ", "))
			continue
		}
		d.Problems.SetLine(kp, k.Line)
		d.Decode(n.Items[i], v.Field(fi), kp)
	}
}

// Suggest returns the allowed name closest to a misspelt one, if it is close.
func Suggest(got string, allowed []string) string {
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

// quoteFields renders a command string as a suggested list, split at spaces.
func quoteFields(s string) string {
	f := strings.Fields(s)
	for i := range f {
		f[i] = strconv.Quote(f[i])
	}
	return strings.Join(f, ", ")
}
