package results

// smallJSON is the longest container (in compact form) written on one line.
const smallJSON = 200

// indentJSON indents compact JSON (as json.Marshal writes it) by two spaces, but keeps
// every container whose compact form is at most smallJSON bytes on one line: a summary
// of 10,000 nodes then has one line per candidate and per node value instead of ten, and
// is written several times faster than json.MarshalIndent writes it.
func indentJSON(src []byte) []byte {
	dst := make([]byte, 0, len(src)+len(src)/4)
	dst, _ = indentValue(dst, src, 0, 0)
	return append(dst, '\n')
}

// indentValue writes the value at src[i:] and returns the index after it.
func indentValue(dst, src []byte, i, depth int) ([]byte, int) {
	if c := src[i]; c != '{' && c != '[' {
		end := scalarEnd(src, i)
		return append(dst, src[i:end]...), end
	}
	end := closing(src, i) + 1
	if end-i <= smallJSON {
		return append(dst, src[i:end]...), end
	}
	obj := src[i] == '{'
	dst = append(dst, src[i])
	i++
	for first := true; src[i] != '}' && src[i] != ']'; first = false {
		if !first {
			dst = append(dst, ',')
			i++ // the comma
		}
		dst = newline(dst, depth+1)
		if obj {
			k := scalarEnd(src, i) // the key
			dst = append(dst, src[i:k]...)
			dst = append(dst, ':', ' ')
			i = k + 1 // the colon
		}
		dst, i = indentValue(dst, src, i, depth+1)
	}
	dst = newline(dst, depth)
	return append(dst, src[i]), i + 1
}

func newline(dst []byte, depth int) []byte {
	dst = append(dst, '\n')
	for range depth {
		dst = append(dst, ' ', ' ')
	}
	return dst
}

// scalarEnd returns the index after the string, number or literal at src[i].
func scalarEnd(src []byte, i int) int {
	if src[i] == '"' {
		for j := i + 1; j < len(src); j++ {
			switch src[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(src)
	}
	for j := i; j < len(src); j++ {
		switch src[j] {
		case ',', ']', '}', ':':
			return j
		}
	}
	return len(src)
}

// closing returns the index of the bracket that closes the one at src[i].
func closing(src []byte, i int) int {
	depth := 0
	for j := i; j < len(src); j++ {
		switch src[j] {
		case '"':
			j = scalarEnd(src, j) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(src) - 1
}
