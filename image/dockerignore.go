package image

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// ignoreRule is one line of a .dockerignore file.
type ignoreRule struct {
	re      *regexp.Regexp
	exclude bool // a "!" line: re-include what earlier lines excluded
	text    string
}

// ignoreRules follows Docker's .dockerignore semantics: patterns are cleaned and matched
// against slash-separated paths relative to the context; "*" and "?" do not cross "/", "**"
// matches any number of folders, a pattern that matches a folder also matches everything
// below it, "!" re-includes, and the last matching line wins.
type ignoreRules []ignoreRule

// IgnoreError is a .dockerignore line that is not a valid pattern: bad input (exit 4).
type IgnoreError struct {
	File string // the .dockerignore's path ("" until known)
	Line int
	Text string
	Err  error
}

func (e *IgnoreError) Error() string {
	return fmt.Sprintf("%s:%d: %q is not a valid pattern: %v (fix or remove that line)", e.File, e.Line, e.Text, e.Err)
}

// InvalidInput marks the error as bad input.
func (e *IgnoreError) InvalidInput() bool { return true }

// CheckDockerignore parses the context's .dockerignore, if there is one, so that a bad
// pattern is reported when the manifest is checked rather than when the image is built.
func CheckDockerignore(contextDir string) error {
	_, err := readDockerignore(contextDir)
	return err
}

// readDockerignore reads and parses <contextDir>/.dockerignore; no file means no rules.
func readDockerignore(contextDir string) (ignoreRules, error) {
	file := filepath.Join(contextDir, ".dockerignore")
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rules, err := parseDockerignore(data)
	var ie *IgnoreError
	if errors.As(err, &ie) {
		ie.File = file
	}
	return rules, err
}

func parseDockerignore(data []byte) (ignoreRules, error) {
	var rules ignoreRules
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		r := ignoreRule{text: s}
		if strings.HasPrefix(s, "!") {
			r.exclude = true
			s = strings.TrimSpace(s[1:])
		}
		s = strings.TrimPrefix(path.Clean("/"+s), "/")
		if s == "" {
			s = "."
		}
		re, err := globRegexp(s)
		if err != nil {
			return nil, &IgnoreError{File: ".dockerignore", Line: line, Text: r.text, Err: err}
		}
		r.re = re
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

func globRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
					b.WriteString("(.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed [")
			}
			class := p[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j
		case '\\':
			if i+1 < len(p) {
				i++
				b.WriteString(regexp.QuoteMeta(string(p[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// ignored reports whether rel (slash-separated, relative to the context) is excluded.
func (rules ignoreRules) ignored(rel string) bool {
	excluded := false
	for _, r := range rules {
		if r.matches(rel) {
			excluded = !r.exclude
		}
	}
	return excluded
}

// matches is true when the pattern matches rel or one of its parent folders.
func (r ignoreRule) matches(rel string) bool {
	for p := rel; ; {
		if r.re.MatchString(p) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}
