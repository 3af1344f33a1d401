package document

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
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

// MaxProblems is how many problems an Error keeps: the first ones, by line. The others are
// only counted (Error.More), so that a file of a million mistakes costs neither a million
// messages' memory nor a million lines of output.
const MaxProblems = 100

// Error is every problem found in one input, returned together so that a user fixes them
// all in one round. It is an invalid-input error: the CLI exits 4 on it.
type Error struct {
	File     string
	Kind     string    // what the file is, for the message: "manifest" (default) or "catalog"
	Problems []Problem // at most MaxProblems when added with Add
	More     int       // problems found beyond those kept
}

// Add records a problem, keeping the MaxProblems with the lowest lines (the first found
// among those on one line) and counting the others in More.
func (e *Error) Add(p Problem) {
	e.Problems = append(e.Problems, p)
	if len(e.Problems) >= 2*MaxProblems {
		e.trim()
	}
}

// trim sorts the problems by line (stably: on one line, in the order found) and keeps the
// first MaxProblems.
func (e *Error) trim() {
	sort.SliceStable(e.Problems, func(i, j int) bool { return e.Problems[i].Line < e.Problems[j].Line })
	if len(e.Problems) > MaxProblems {
		e.More += len(e.Problems) - MaxProblems
		e.Problems = e.Problems[:MaxProblems]
	}
}

func (e *Error) Error() string {
	var b strings.Builder
	kind := e.Kind
	if kind == "" {
		kind = "manifest"
	}
	if len(e.Problems) == 1 && e.More == 0 {
		fmt.Fprintf(&b, "invalid %s: %s", kind, e.Problems[0])
		return b.String()
	}
	shown := e.Problems[:min(len(e.Problems), MaxProblems)]
	more := e.More + len(e.Problems) - len(shown)
	fmt.Fprintf(&b, "invalid %s %s: %d problems:", kind, e.File, len(shown)+more)
	for _, p := range shown {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n  … and %d more problems (the first %d are shown: fix them and run again)", more, len(shown))
	}
	return b.String()
}

// InvalidInput marks the error as bad user input (exit code 4).
func (e *Error) InvalidInput() bool { return true }

// Problems collects the problems of one file, remembering where every field path was
// written (SetLine), so that a problem found later, by a check of the decoded values, is
// located at the line of its field (Add).
type Problems struct {
	file  string
	e     Error
	paths map[string]bool // the field paths with a problem, also of those only counted
	n     int             // problems recorded, also those only counted
	pos   map[string]int  // field path -> line
}

// NewProblems is an empty collector for the problems of file.
func NewProblems(file string) *Problems {
	return &Problems{file: file, e: Error{File: file}, paths: map[string]bool{}, pos: map[string]int{}}
}

// Fresh is a new, empty collector for p's file that shares p's positions: for a check run
// again (for each variant of an experiment), whose problems the caller rewrites before it
// records them in p.
func (p *Problems) Fresh() *Problems {
	q := NewProblems(p.file)
	q.pos = p.pos
	return q
}

// File is the file the problems are of.
func (p *Problems) File() string { return p.file }

// At records a problem at an explicit line.
func (p *Problems) At(line int, path, format string, args ...any) {
	p.Record(Problem{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Record records a problem as it is.
func (p *Problems) Record(pr Problem) {
	p.n++
	p.paths[pr.Path] = true
	p.e.Add(pr)
}

// Merge records the problems of another input (an imported catalog's).
func (p *Problems) Merge(e *Error) {
	for _, pr := range e.Problems {
		p.Record(pr)
	}
	p.e.More += e.More
	p.n += e.More
}

// Count is how many problems were recorded (compared before and after a step, it says
// whether the step found one).
func (p *Problems) Count() int { return p.n }

// Add records a problem at the line where path (or its nearest written parent) was written,
// unless path already has one: a value the decoder refused (a wrong type) is then absent,
// and a second message about that absence ("is required", "got 0") would be false.
func (p *Problems) Add(path, format string, args ...any) {
	if p.Has(path) {
		return
	}
	p.At(p.Line(path), path, format, args...)
}

// Line finds where path was written; a missing field is reported at its parent.
func (p *Problems) Line(path string) int {
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

// SetLine records that path was written at line (a later call for the same path wins).
func (p *Problems) SetLine(path string, line int) { p.pos[path] = line }

// SetLineOnce records that path was written at line, unless a line is known for it.
func (p *Problems) SetLineOnce(path string, line int) {
	if _, ok := p.pos[path]; !ok {
		p.pos[path] = line
	}
}

// Written reports the line path was written at, and whether it was written.
func (p *Problems) Written(path string) (int, bool) {
	l, ok := p.pos[path]
	return l, ok
}

// Has reports whether a problem was already recorded for path.
func (p *Problems) Has(path string) bool { return p.paths[path] }

// Err is the problems recorded as an *Error (the first MaxProblems by line), or nil.
func (p *Problems) Err() error {
	if p.n == 0 {
		return nil
	}
	e := p.e
	e.trim()
	return &e
}

// Join is the field path of field under parent. A field written by the user (a key of env:)
// is clipped (Clip): a path is for messages, and a 1 MiB key copied into the path of every
// value under it would cost memory and time.
func Join(parent, field string) string {
	field = Clip(field)
	if parent == "" {
		return field
	}
	return parent + "." + field
}

// maxPathField is the longest name Clip keeps whole, in bytes.
const maxPathField = 100

// Clip shortens a name a user wrote (a mapping key) for a field path or a message: at most
// 100 bytes, cut at a character boundary and marked with "…".
func Clip(s string) string {
	if len(s) <= maxPathField {
		return s
	}
	cut := maxPathField
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Index is the field path of the i-th item of the list at parent.
func Index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }
