package models

import (
	"fmt"

	"github.com/benchctl/benchctl/internal/shellwords"
	"github.com/benchctl/benchctl/manifest/document"
)

// shellOperator returns the first shell operator of s that is outside single quotes (&&,
// ||, |, ;, &, <, >, a backtick, $( or $ ... a variable), or "": what a shell would act on,
// which words put before a command without a shell cannot do.
func shellOperator(s string) string {
	inSingle, inDouble := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inSingle:
			if c == '\'' {
				inSingle = false
			}
			continue
		case c == '\\' && i+1 < len(s):
			i++
			continue
		case c == '\'' && !inDouble:
			inSingle = true
			continue
		case c == '"':
			inDouble = !inDouble
			continue
		case c == '`':
			return "`"
		case c == '$':
			if i+1 < len(s) && s[i+1] == '(' {
				return "$("
			}
			return "$ (a variable expansion)"
		}
		if inDouble {
			continue
		}
		switch c {
		case '&', '|':
			if i+1 < len(s) && s[i+1] == c {
				return string([]byte{c, c})
			}
			return string(c)
		case ';', '<', '>':
			return string(c)
		}
	}
	return ""
}

// execWords splits s into words as a shell would, with quotes and nothing expanded; a shell
// operator or bad quoting is a message saying so.
func execWords(s string) ([]string, string) {
	if op := shellOperator(s); op != "" {
		return nil, fmt.Sprintf("%s needs a shell (it has the operator %s)", document.Quote(s), op)
	}
	words, err := shellwords.Split(s)
	if err != nil {
		return nil, err.Error()
	}
	return words, ""
}
