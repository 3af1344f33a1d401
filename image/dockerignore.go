package image

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/internal/safefile"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// ignoreRules are a .dockerignore file's patterns, matched with the same library Docker
// and BuildKit use (moby/patternmatcher), so that what the key covers is exactly what a
// builder receives: "*" and "?" do not cross "/", "**" matches any number of folders, a
// pattern that matches a folder also matches everything below it, "!" re-includes, and
// the last matching line wins.
type ignoreRules struct {
	pm *patternmatcher.PatternMatcher // nil: no rules
}

// IgnoreError is a .dockerignore line that is not a valid pattern, or an ignore file that
// cannot be read (Line 0): bad input (exit 4).
type IgnoreError struct {
	File string // the ignore file's path ("" until known)
	Line int
	Text string
	Err  error
}

func (e *IgnoreError) Error() string {
	if e.Line == 0 { // the file as a whole
		return fmt.Sprintf("%s %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s:%d: %q is not a valid pattern: %v (fix or remove that line)", e.File, e.Line, shortText(e.Text), e.Err)
}

// InvalidInput marks the error as bad input.
func (e *IgnoreError) InvalidInput() bool { return true }

func shortText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// CheckDockerignore parses the build's ignore file, if there is one, so that a bad pattern
// is reported when the manifest is checked rather than when the image is built.
func CheckDockerignore(in BuildInput) error {
	_, _, err := readDockerignore(in)
	return err
}

// ignoreFile is the ignore file a builder applies: <Dockerfile>.dockerignore beside the
// Dockerfile when there is one (BuildKit prefers it), else the context's .dockerignore.
func ignoreFile(in BuildInput) string {
	if in.Dockerfile != "" {
		if st, err := os.Stat(in.Dockerfile + ".dockerignore"); err == nil && st.Mode().IsRegular() {
			return in.Dockerfile + ".dockerignore"
		}
	}
	return filepath.Join(in.Context, ".dockerignore")
}

// readDockerignore reads and parses the ignore file of a build; none means no rules. file is
// the path it read ("" when there was none).
func readDockerignore(in BuildInput) (rules ignoreRules, file string, err error) {
	file = ignoreFile(in)
	data, err := safefile.ReadFile(file, maxDockerfile) // a FIFO is refused without blocking
	if os.IsNotExist(err) {
		return ignoreRules{}, "", nil
	}
	if err != nil {
		var nr *safefile.NotRegularError
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EISDIR) || errors.As(err, &nr) { // the user's to fix: exit 4
			return ignoreRules{}, file, &IgnoreError{File: file, Err: fmt.Errorf("cannot be read (%w); it must be a readable file of patterns, or absent", err)}
		}
		return ignoreRules{}, file, fmt.Errorf("reading %s: %w", file, err)
	}
	rules, err = parseDockerignore(data)
	var ie *IgnoreError
	if errors.As(err, &ie) {
		ie.File = file
	}
	return rules, file, err
}

// parseDockerignore checks each line on its own (so that an error names its line), then
// builds one matcher from the whole file as Docker reads it.
func parseDockerignore(data []byte) (ignoreRules, error) {
	for i, line := range strings.Split(string(data), "\n") {
		text := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if len(text) > 4096 {
			return ignoreRules{}, &IgnoreError{File: ".dockerignore", Line: i + 1, Text: text, Err: fmt.Errorf("a line of %d bytes is longer than any path", len(text))}
		}
		pats, err := ignorefile.ReadAll(strings.NewReader(text))
		if err == nil {
			_, err = patternmatcher.New(pats)
		}
		if err != nil {
			return ignoreRules{}, &IgnoreError{File: ".dockerignore", Line: i + 1, Text: text, Err: err}
		}
	}
	pats, err := ignorefile.ReadAll(bytes.NewReader(data))
	if err != nil {
		return ignoreRules{}, &IgnoreError{File: ".dockerignore", Line: 1, Err: err}
	}
	if len(pats) == 0 {
		return ignoreRules{}, nil
	}
	pm, err := patternmatcher.New(pats)
	if err != nil {
		return ignoreRules{}, &IgnoreError{File: ".dockerignore", Line: 1, Err: err}
	}
	return ignoreRules{pm: pm}, nil
}

// ignored reports whether a slash-separated path relative to the context is left out.
func (r ignoreRules) ignored(rel string) bool {
	if r.pm == nil {
		return false
	}
	ok, err := r.pm.MatchesOrParentMatches(rel)
	return err == nil && ok
}

// canSkipDir reports whether nothing below an ignored folder can be re-included, so that
// the walk need not enter it (it may not even be readable).
func (r ignoreRules) canSkipDir() bool { return r.pm != nil && !r.pm.Exclusions() }
