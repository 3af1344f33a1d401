package document

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestJSONTokens(t *testing.T) {
	long := strings.Repeat("a", maxScalar+1)
	spaces := strings.Repeat(" ", maxScalar+1)
	for _, c := range []struct {
		name, doc string
		off       int // -1: nothing too long
		blank     bool
	}{
		{"short", `{"a": "b", "n": 12}`, -1, false},
		{"a string at the cap", `["` + long[1:] + `"]`, -1, false},
		{"a long string", `["` + long + `"]`, 2, false},
		{"a long string of spaces", `["` + spaces + `"]`, 2, false},
		{"escaped quotes stay inside", `["\"` + long + `"]`, 2, false},
		{"an escaped backslash ends", `["\\", "` + long[:10] + `"]`, -1, false},
		{"an unterminated string", `["` + long, 2, false},
		{"a long literal", `[` + long + `]`, 1, false},
		{"blank space", `[` + spaces + `1]`, 1, true},
		{"trailing blank space", `[1]` + spaces, 3, true},
	} {
		off, _, blank, err := jsonTokens(context.Background(), []byte(c.doc))
		if err != nil || off != c.off || (off >= 0 && blank != c.blank) {
			t.Errorf("%s: offset %d blank %v (%v), want %d %v", c.name, off, blank, err, c.off, c.blank)
		}
	}
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

func TestValidUTF8InPieces(t *testing.T) {
	euro := strings.Repeat("€", 1<<20) // 3 bytes each: the pieces' cuts fall inside characters
	for _, c := range []struct {
		name string
		doc  string
		want bool
	}{
		{"ASCII", strings.Repeat("a", 3<<20), true},
		{"three-byte characters", euro, true},
		{"a stray continuation byte at a cut", euro[:1<<20] + "\x80" + euro, false},
		{"a truncated character at the end", euro + "\xe2\x82", false},
		{"an invalid byte late", euro + "\xff", false},
	} {
		got, err := validUTF8(context.Background(), []byte(c.doc))
		if err != nil || got != c.want || got != utf8Valid(c.doc) {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}
