package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/safefile"
)

// MissingSource is a COPY or ADD source, taken from the build context, that the context
// lacks (or that its .dockerignore leaves out): the build would fail at that step.
type MissingSource struct {
	Dockerfile string // the Dockerfile's path
	Line       int    // where the instruction starts, from 1
	Source     string // as written
	Why        string // "not in the build context DIR", "left out by .dockerignore", ...
}

func (m MissingSource) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", m.Dockerfile, m.Line, m.Source, m.Why)
}

// MissingSourceHint says how a missing source usually comes to be: a file the build expects
// someone to make first (the shipped examples' static binaries, which `make examples` builds).
const MissingSourceHint = "make the file before building (in a benchctl checkout, `make examples` builds the examples' bin/ binaries), or fix the COPY/ADD line"

// MissingSourcesError is a build stopped before it started because COPY or ADD sources are
// missing from the context; exit 2, a build failure, as the builder would have ended it.
type MissingSourcesError struct {
	Missing []MissingSource
}

func (e *MissingSourcesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the build context lacks %d file(s) the Dockerfile copies:", len(e.Missing))
	for _, m := range e.Missing {
		b.WriteString("\n  " + m.String())
	}
	b.WriteString("\n" + MissingSourceHint)
	return b.String()
}

// ExitCode is 2, a build failure.
func (e *MissingSourcesError) ExitCode() int { return exitcode.Build }

// CheckCopySources returns a *MissingSourcesError when a COPY or ADD of the Dockerfile (one
// without --from, in the stages the build runs) names a source the context lacks.
func CheckCopySources(in BuildInput) error {
	missing, err := MissingSources(in)
	if err != nil || len(missing) == 0 {
		return err
	}
	return &MissingSourcesError{Missing: missing}
}

// MissingSources lists the COPY and ADD sources of the build's Dockerfile that the context
// lacks. Only what can be told without building is checked: sources without --from, not
// URLs, not heredocs, without ${VAR} references; a glob must match something. Only the
// stages the build runs are looked at: the target (else the last stage) and those it needs
// through FROM and COPY --from, as BuildKit builds them. An unreadable Dockerfile is left
// to the builder.
func MissingSources(in BuildInput) ([]MissingSource, error) {
	data, err := safefile.ReadFile(in.Dockerfile, maxDockerfile)
	if err != nil {
		return nil, nil // the builder says what is wrong with the Dockerfile itself
	}
	rules, _, err := readDockerignore(in)
	if err != nil {
		return nil, err
	}
	// Each stage's missing sources and the stages it needs (its FROM, its COPY --from); only
	// the stages the target (else the last stage) needs are built, so only theirs count.
	type stageInfo struct {
		name    string
		needs   []string
		missing []MissingSource
	}
	var stages []*stageInfo
	for _, ins := range dockerfileInstructions(string(data)) {
		switch ins.cmd {
		case "FROM":
			st := &stageInfo{name: strings.ToLower(ins.stage)}
			if f := fromWords(ins.args); len(f) > 0 {
				st.needs = append(st.needs, strings.ToLower(f[0]))
			}
			stages = append(stages, st)
		case "COPY", "ADD":
			if len(stages) == 0 {
				continue
			}
			st := stages[len(stages)-1]
			if from := copyFrom(ins.args); from != "" {
				st.needs = append(st.needs, strings.ToLower(from))
				continue
			}
			srcs, ok := copySources(ins.args)
			if !ok {
				continue
			}
			for _, src := range srcs {
				if why := sourceMissing(in.Context, src, ins.cmd == "ADD", rules); why != "" {
					st.missing = append(st.missing, MissingSource{Dockerfile: in.Dockerfile, Line: ins.line, Source: src, Why: why})
				}
			}
		}
	}
	if len(stages) == 0 {
		return nil, nil
	}
	// The stage a name means: an earlier stage's name or index ("0"), else an image.
	lookup := func(name string, before int) int {
		for i := before - 1; i >= 0; i-- {
			if stages[i].name != "" && stages[i].name == name {
				return i
			}
		}
		if n, err := strconv.Atoi(name); err == nil && n >= 0 && n < before {
			return n
		}
		return -1
	}
	target := len(stages) - 1
	if in.Target != "" {
		if t := lookup(strings.ToLower(in.Target), len(stages)); t >= 0 {
			target = t
		}
	}
	built := make([]bool, len(stages))
	var walk func(i int)
	walk = func(i int) {
		if built[i] {
			return
		}
		built[i] = true
		for _, n := range stages[i].needs {
			if d := lookup(n, i); d >= 0 {
				walk(d)
			}
		}
	}
	walk(target)
	var missing []MissingSource
	for i, st := range stages {
		if built[i] {
			missing = append(missing, st.missing...)
		}
	}
	return missing, nil
}

// fromWords are a FROM's words after its flags (--platform=...): the base, then AS name.
func fromWords(args string) []string {
	f := strings.Fields(args)
	for len(f) > 0 && strings.HasPrefix(f[0], "--") {
		f = f[1:]
	}
	return f
}

// copyFrom is a COPY's --from value ("" without one).
func copyFrom(args string) string {
	rest := args
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		after = strings.TrimSpace(after)
		if v, ok := strings.CutPrefix(flag, "--from="); ok {
			return v
		}
		if flag == "--from" { // --from NAME
			v, _, _ := strings.Cut(after, " ")
			return v
		}
		rest = after
	}
	return ""
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line  int
	cmd   string // upper case
	args  string
	stage string // for FROM: the name after AS
}

// dockerfileInstructions splits a Dockerfile into instructions: comments and blank lines
// dropped, lines ending in a backslash joined with the next. Heredoc bodies are not
// recognised; their lines are rarely COPY or ADD.
func dockerfileInstructions(text string) []instruction {
	var out []instruction
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimSpace(strings.TrimSuffix(lines[i], "\r"))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(strings.TrimSuffix(lines[i], "\r"))
			if strings.HasPrefix(next, "#") {
				next = "\\" // a comment inside a continued instruction is dropped
			}
			l = strings.TrimSuffix(l, "\\") + " " + next
		}
		l = strings.TrimSuffix(l, "\\")
		cmd, args, _ := strings.Cut(strings.Replace(l, "\t", " ", 1), " ")
		ins := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if f := strings.Fields(ins.args); ins.cmd == "FROM" && len(f) >= 3 && strings.EqualFold(f[len(f)-2], "AS") {
			ins.stage = f[len(f)-1]
		}
		out = append(out, ins)
	}
	return out
}

// copySources are the sources of a COPY or ADD's arguments (all but the last word), false
// when they do not come from the build context (--from) or cannot be told (a heredoc).
func copySources(args string) ([]string, bool) {
	from, words := copyWords(args)
	if from || len(words) < 2 {
		return nil, false
	}
	for _, w := range words[:len(words)-1] {
		if strings.HasPrefix(w, "<<") {
			return nil, false
		}
	}
	return words[:len(words)-1], true
}

// copyWords splits a COPY or ADD's arguments: whether a --from flag is among its flags, and
// the words after the flags (shell or exec form; nil when the exec form is not JSON).
func copyWords(args string) (from bool, words []string) {
	rest := args
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		from = from || strings.HasPrefix(flag, "--from")
		rest = strings.TrimSpace(after)
	}
	if strings.HasPrefix(rest, "[") {
		if json.Unmarshal([]byte(rest), &words) != nil {
			return from, nil
		}
		return from, words
	}
	return from, strings.Fields(rest)
}

// sourceMissing says why the source s is not in the context, or "" when it is (or cannot
// be told).
func sourceMissing(context, s string, add bool, rules ignoreRules) string {
	if strings.Contains(s, "$") || (add && (strings.Contains(s, "://") || strings.HasPrefix(s, "git@"))) {
		return ""
	}
	rel := path.Clean("/" + filepath.ToSlash(s))[1:] // a leading / is the context's top; ".." cannot leave it
	if strings.HasPrefix(path.Clean(filepath.ToSlash(s)), "../") {
		return "outside the build context " + context
	}
	if rel == "" {
		return "" // the whole context
	}
	matches := []string{rel}
	if strings.ContainsAny(rel, "*?[") {
		found, err := filepath.Glob(filepath.Join(context, filepath.FromSlash(rel)))
		if err != nil {
			return ""
		}
		matches = matches[:0]
		for _, f := range found {
			if r, err := filepath.Rel(context, f); err == nil {
				matches = append(matches, filepath.ToSlash(r))
			}
		}
		if len(matches) == 0 {
			return "matches nothing in the build context " + context
		}
	}
	ignored := 0
	for _, m := range matches {
		if _, err := os.Lstat(filepath.Join(context, filepath.FromSlash(m))); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENAMETOOLONG) {
			return "not in the build context " + context
		} else if err != nil {
			return fmt.Sprintf("cannot be read in the build context %s (%v)", context, err)
		}
		if rules.ignored(m) {
			ignored++
		}
	}
	if ignored == len(matches) {
		return "left out of the build context by its .dockerignore"
	}
	return ""
}

// FinalStage reads a Dockerfile's last stage: its base image (as written after FROM) and the
// path inside the image of the first file that stage copies in from the build context ("" when
// none), which in a FROM scratch image is the program to run: there is no shell.
func FinalStage(dockerfile []byte) (base, program string) {
	for _, ins := range dockerfileInstructions(string(dockerfile)) {
		switch ins.cmd {
		case "FROM":
			base, program = "", ""
			for _, f := range strings.Fields(ins.args) {
				if !strings.HasPrefix(f, "--") {
					base = f
					break
				}
			}
		case "COPY", "ADD":
			if program != "" {
				continue
			}
			_, words := copyWords(ins.args)
			if len(words) != 2 || strings.HasPrefix(words[0], "<<") {
				continue // one file copied: the program; several, or a heredoc: not told
			}
			dest := words[1]
			if strings.HasSuffix(dest, "/") {
				dest += path.Base(filepath.ToSlash(words[0]))
			}
			if path.IsAbs(dest) && !strings.ContainsAny(dest, "$*?[") {
				program = path.Clean(dest)
			}
		}
	}
	return base, program
}
