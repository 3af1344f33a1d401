package jsonlimit

import "fmt"

// Limits of one JSON document.
type Limits struct {
	// Marks bounds the '{', '[', ',' and ':' outside strings, which bound the values: every
	// value but the first is opened by one of them, and each costs at most two.
	Marks int
	// Containers bounds the objects and lists ('{' and '['): decoded into structs and
	// slices they cost hundreds of bytes each, where a string or number costs tens.
	Containers int
	// Depth bounds nesting.
	Depth int
}

// Error is a document over its limits.
type Error struct {
	What   string // "more than 500000 values", "nesting deeper than 64 levels"
	Offset int    // where the limit was passed, in bytes from the start
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (at byte %d): no file benchctl writes is this large; it was not written by benchctl, remove or replace it", e.What, e.Offset)
}

// Check returns an *Error when data holds more than l.Marks value marks or nests deeper
// than l.Depth. It does not check that data is valid JSON: the decoder does that.
func Check(data []byte, l Limits) error {
	marks, containers, depth := 0, 0, 0
	inStr, esc := false, false
	for i, b := range data {
		if inStr {
			switch {
			case esc:
				esc = false
			case b == '\\':
				esc = true
			case b == '"':
				inStr = false
			}
			continue
		}
		switch b {
		case '"':
			inStr = true
		case '{', '[':
			if depth++; depth > l.Depth {
				return &Error{What: fmt.Sprintf("nesting deeper than %d levels", l.Depth), Offset: i}
			}
			if containers++; containers > l.Containers {
				return &Error{What: fmt.Sprintf("more than %d objects and lists", l.Containers), Offset: i}
			}
			fallthrough
		case ',', ':':
			if marks++; marks > l.Marks {
				return &Error{What: fmt.Sprintf("more than %d values", l.Marks), Offset: i}
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
