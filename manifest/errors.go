package manifest

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with an input file, located as precisely as possible.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Path string `json:"path,omitempty"` // field path, e.g. benchmarks[0].command
	Msg  string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is every problem found in one input, returned together so that a user fixes them
// all in one round. It is an invalid-input error: the CLI exits 4 on it.
type Error struct {
	File     string
	Kind     string // what the file is, for the message: "manifest" (default) or "catalog"
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	kind := e.Kind
	if kind == "" {
		kind = "manifest"
	}
	if len(e.Problems) == 1 {
		fmt.Fprintf(&b, "invalid %s: %s", kind, e.Problems[0])
		return b.String()
	}
	fmt.Fprintf(&b, "invalid %s %s: %d problems:", kind, e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// InvalidInput marks the error as bad user input (exit code 4).
func (e *Error) InvalidInput() bool { return true }

// problems collects problems for one file, remembering where every field path was written.
type problems struct {
	file string
	list []Problem
	pos  map[string]int // field path -> line
}

func newProblems(file string) *problems {
	return &problems{file: file, pos: map[string]int{}}
}

// at records a problem at an explicit line.
func (p *problems) at(line int, path, format string, args ...any) {
	p.list = append(p.list, Problem{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// add records a problem at the line where path (or its nearest written parent) was written,
// unless path already has one: a value the decoder refused (a wrong type) is then absent,
// and a second message about that absence ("is required", "got 0") would be false.
func (p *problems) add(path, format string, args ...any) {
	if p.has(path) {
		return
	}
	p.at(p.line(path), path, format, args...)
}

// line finds where path was written; a missing field is reported at its parent.
func (p *problems) line(path string) int {
	for q := path; ; {
		if l, ok := p.pos[q]; ok {
			return l
		}
		i := strings.LastIndexAny(q, ".[")
		if i <= 0 {
			if l, ok := p.pos[""]; ok {
				return l
			}
			return 1
		}
		q = q[:i]
	}
}

// has reports whether a problem was already recorded for path.
func (p *problems) has(path string) bool {
	for _, pr := range p.list {
		if pr.Path == path {
			return true
		}
	}
	return false
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	sort.SliceStable(p.list, func(i, j int) bool { return p.list[i].Line < p.list[j].Line })
	return &Error{File: p.file, Problems: p.list}
}

func join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

func index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }
