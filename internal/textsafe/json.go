package textsafe

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// JSON returns JSON text (as encoding/json writes it: UTF-8, C0 controls already escaped)
// with every rune that Line escapes and encoding/json leaves raw (the C1 controls and the
// bidi controls) written as a \uXXXX escape. A JSON reader gets the same strings back; a
// terminal that shows the file shows the escape. Such runes appear only inside strings in
// JSON, where \uXXXX means the rune itself. data is returned unchanged when there is none.
func JSON(data []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 || IsSafeRune(r) {
			i += size
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(data)+64)
		}
		out = append(out, data[last:i]...)
		out = append(out, `\u`...)
		h := strconv.FormatInt(int64(r), 16)
		out = append(out, bytes.Repeat([]byte("0"), 4-len(h))...)
		out = append(out, h...)
		i += size
		last = i
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
