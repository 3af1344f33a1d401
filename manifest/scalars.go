package manifest

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchctl/benchctl/manifest/document"
)

// GPUCount is a per-node GPU count: a positive number, or "all" (stored as 0).
type GPUCount struct {
	N   int  // 0 = all
	Set bool // written in the file
}

func (c *GPUCount) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	c.Set = true
	if n.Kind == document.ScalarNode && n.Tag == document.TagStr && n.Value == "all" {
		return
	}
	if i, ok := document.Int(n); ok && i >= 1 && i <= 1024 {
		c.N = int(i)
		return
	}
	d.Problems.At(n.Line, path, "must be a positive number of GPUs per node (at most 1024) or \"all\", got %s", n.Describe())
}

// DurationSpec is a Go duration written as a string ("2h", "90m", "1h30m").
type DurationSpec struct {
	D   time.Duration
	Set bool
}

func (t *DurationSpec) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	t.Set = true
	if n.Kind != document.ScalarNode || n.Tag != document.TagStr {
		hint := ""
		if n.Tag == document.TagInt {
			hint = fmt.Sprintf(" (a bare number has no unit: write \"%ss\" or \"%sm\")", n.Value, n.Value)
		}
		d.Problems.At(n.Line, path, "must be a duration like \"2h\", \"90m\" or \"1h30m\", got %s%s", n.Describe(), hint)
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Problems.At(n.Line, path, "%s is not a duration (use a number with a unit: s, m, h, e.g. \"2h\" or \"45m\")", document.Quote(n.Value))
		return
	}
	if v <= 0 {
		d.Problems.At(n.Line, path, "must be longer than zero, got %s", document.Quote(n.Value))
		return
	}
	t.D = v
}

// ByteSize is a size in bytes, written as a number of bytes or with a unit ("16g", "512m").
type ByteSize struct {
	Bytes int64
	Text  string
}

var sizeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?b)?\s*$`)
})

// ParseByteSize reads "16g", "512MiB", "1.5G" or "1024" (binary multiples, as Docker does).
func ParseByteSize(s string) (int64, error) {
	m := sizeRE().FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%s is not a size (use bytes or a number with k, m, g or t, e.g. \"16g\")", document.Quote(s))
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not a size", document.Quote(s))
	}
	mult := map[string]float64{"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[strings.ToLower(m[2])]
	v := f * mult
	if v < 1 || v > 1<<50 {
		return 0, fmt.Errorf("%s is out of range (1 byte to 1 PiB)", document.Quote(s))
	}
	return int64(v), nil
}

// FormatBytes writes a byte count for people: "512 B", "1.5 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func (b *ByteSize) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	if n.Kind == document.NullNode {
		return
	}
	if n.Kind != document.ScalarNode || (n.Tag != document.TagStr && n.Tag != document.TagInt) {
		d.Problems.At(n.Line, path, "must be a size like \"16g\" or a number of bytes, got %s", n.Describe())
		return
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		d.Problems.At(n.Line, path, "%v", err)
		return
	}
	b.Bytes, b.Text = v, n.Value
}

// Ulimit is a resource limit: one number for soft and hard (-1 = unlimited) or {soft, hard}.
type Ulimit struct {
	Soft, Hard int64
}

func (u *Ulimit) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	if i, ok := document.Int(n); ok {
		u.Soft, u.Hard = i, i
		if i < -1 {
			d.Problems.At(n.Line, path, "must be -1 (unlimited) or a number ≥ 0, got %d", i)
		}
		return
	}
	if n.Kind == document.MapNode {
		var raw struct {
			Soft *int64 `json:"soft"`
			Hard *int64 `json:"hard"`
		}
		before := d.Problems.Count()
		d.DecodeStruct(n, reflect.ValueOf(&raw).Elem(), path)
		if d.Problems.Count() > before {
			return
		}
		if raw.Soft == nil || raw.Hard == nil {
			d.Problems.At(n.Line, path, "needs both soft and hard (or a single number for both)")
			return
		}
		u.Soft, u.Hard = *raw.Soft, *raw.Hard
		if u.Soft < -1 || u.Hard < -1 {
			d.Problems.At(n.Line, path, "limits must be -1 (unlimited) or ≥ 0")
		} else if u.Hard != -1 && (u.Soft == -1 || u.Soft > u.Hard) {
			d.Problems.At(n.Line, path, "soft limit %d is above the hard limit %d", u.Soft, u.Hard)
		}
		return
	}
	d.Problems.At(n.Line, path, "must be a number (-1 = unlimited) or {soft: N, hard: N}, got %s", n.Describe())
}

// MountSpec is a bind mount as written: "src:dst[:ro|rw]" or {source, target, readOnly}.
type MountSpec struct {
	Source   string
	Target   string
	ReadOnly bool
	Line     int
}

// splitMount splits "src:dst[:opt]" on the colons outside ${...}, so that a default such as
// "${SCRATCH:-/scratch}/ckpt:/ckpt" stays in one piece.
func splitMount(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '$':
			i++ // $$ is a literal $
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i++
		case s[i] == '}' && depth > 0:
			depth--
		case s[i] == ':' && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func (m *MountSpec) DecodeNode(d *document.Decoder, n *document.Node, path string) {
	m.Line = n.Line
	switch {
	case n.Kind == document.ScalarNode && n.Tag == document.TagStr:
		parts := splitMount(n.Value)
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			d.Problems.At(n.Line, path, "%s is not a mount (write \"SOURCE:TARGET\" or \"SOURCE:TARGET:ro\")", document.Quote(n.Value))
			return
		}
		m.Source, m.Target = parts[0], parts[1]
		if len(parts) == 3 {
			switch parts[2] {
			case "ro":
				m.ReadOnly = true
			case "rw":
			default:
				d.Problems.At(n.Line, path, "mount option %s is not supported (allowed: ro, rw)", document.Quote(parts[2]))
			}
		}
	case n.Kind == document.MapNode:
		var raw struct {
			Source   string `json:"source"`
			Target   string `json:"target"`
			ReadOnly bool   `json:"readOnly"`
		}
		before := d.Problems.Count()
		d.DecodeStruct(n, reflect.ValueOf(&raw).Elem(), path)
		if d.Problems.Count() > before {
			return
		}
		if raw.Source == "" || raw.Target == "" {
			d.Problems.At(n.Line, path, "needs both source and target")
			return
		}
		m.Source, m.Target, m.ReadOnly = raw.Source, raw.Target, raw.ReadOnly
	default:
		d.Problems.At(n.Line, path, "must be \"SOURCE:TARGET[:ro]\" or {source, target, readOnly}, got %s", n.Describe())
	}
}
