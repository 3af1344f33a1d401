package textsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Line returns s as one line that a terminal shows and does not act on. Escaped, as Go
// writes them in a string literal, so that what was there stays readable:
//
//   - tab, newline and carriage return as \t, \n, \r (a table cell is one line);
//   - every other C0 control and DEL as \xNN (ESC is \x1b);
//   - the C1 controls U+0080 to U+009F as \u0080 to \u009f (some terminals take U+009B for
//     CSI);
//   - the line and paragraph separators U+2028 and U+2029, and the bidi controls that
//     reorder what is shown ("Trojan Source"): U+061C, U+200E, U+200F, U+202A to U+202E and
//     U+2066 to U+2069, as \u2028 ...;
//   - a byte that is not UTF-8 as \xNN.
//
// A backslash is left as it is: an escape shown is text, never an act. s is returned
// unchanged (not copied) when nothing needs escaping.
func Line(s string) string { return escape(s, false) }

// Text is Line for text of several lines (an error message, a log excerpt): newlines and
// tabs are kept, everything else Line escapes is escaped.
func Text(s string) string { return escape(s, true) }

// IsSafeRune reports whether r may be shown as it is on a line (see Line).
func IsSafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return false
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x2028 && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return false
	}
	return true
}

func escape(s string, keepLines bool) string {
	i := firstUnsafe(s, keepLines)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteByte(byte(r))
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			writeHex(&b, byte(r))
		case !IsSafeRune(r):
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)))
			b.WriteString(h)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// firstUnsafe is the index of the first byte of s that escape changes, or -1.
func firstUnsafe(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && !(keepLines && (c == '\n' || c == '\t'))) || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !IsSafeRune(r) {
			return i
		}
		i += size
	}
	return -1
}

func writeHex(b *strings.Builder, c byte) {
	const hex = "0123456789abcdef"
	b.WriteString(`\x`)
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}
