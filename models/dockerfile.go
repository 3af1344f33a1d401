package models

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
)

// A MAD model's dockerfile is a prefix, as in madengine: its candidates are the
// <prefix>.*Dockerfile files beside it, each of which may say which GPU vendor (and guest
// OS) it is for in a line such as
//
//	# CONTEXT {'gpu_vendor': 'AMD', 'guest_os': 'UBUNTU'}
//
// (a Python dict literal). ResolveDockerfile keeps the candidates whose CONTEXT matches.

// ParseContextLine reads the CONTEXT line of a Dockerfile: the keys and values of its
// dict, keys as written and values as strings. ok is false when the file has none.
func ParseContextLine(dockerfile []byte) (ctx map[string]string, ok bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	sc.Buffer(make([]byte, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		rest, found := strings.CutPrefix(t, "#")
		if !found {
			continue
		}
		rest = strings.TrimSpace(rest)
		if len(rest) < len("CONTEXT") || !strings.EqualFold(rest[:len("CONTEXT")], "CONTEXT") {
			continue
		}
		d, err := parsePyDict(strings.TrimSpace(rest[len("CONTEXT"):]))
		if err != nil {
			return nil, true, fmt.Errorf("line %d: the CONTEXT line is not a dict of strings ({'gpu_vendor': 'AMD'}): %v", line, err)
		}
		return d, true, nil
	}
	return nil, false, sc.Err()
}

// parsePyDict parses {'k': 'v', "k2": "v2"}: string keys and values in single or double
// quotes (a backslash escapes the next character), commas between, a trailing one allowed.
func parsePyDict(s string) (map[string]string, error) {
	p := &pyParser{s: s}
	out := map[string]string{}
	p.space()
	if !p.eat('{') {
		return nil, fmt.Errorf("expected {")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if !p.eat(':') {
			return nil, fmt.Errorf("expected : after %q", k)
		}
		p.space()
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		out[k] = v
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return nil, fmt.Errorf("expected , or } after %q", v)
		}
	}
	p.space()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("unexpected %q after the dict", p.s[p.i:])
	}
	return out, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", fmt.Errorf("expected a quoted string at %q", p.s[p.i:])
	}
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\' && p.i < len(p.s):
			b.WriteByte(p.s[p.i])
			p.i++
		case c == q:
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unclosed string")
}

// DockerfileError is a model's dockerfile prefix that gives no single Dockerfile for the
// job's GPU vendor (invalid input, exit 4).
type DockerfileError struct {
	Model, Prefix, Msg string
	Candidates         []string
}

func (e *DockerfileError) Error() string {
	msg := fmt.Sprintf("model %s: dockerfile %s: %s", e.Model, e.Prefix, e.Msg)
	if len(e.Candidates) > 0 {
		msg += " (candidates: " + strings.Join(e.Candidates, "; ") + ")"
	}
	return msg
}

// InvalidInput marks the error as bad input.
func (e *DockerfileError) InvalidInput() bool { return true }

// ResolveDockerfile picks a model's Dockerfile: among the <prefix>.*Dockerfile files
// (prefix relative to root, the folder of the catalog), the one whose CONTEXT line names
// vendor (amd or nvidia; case does not matter) and, when guestOS is given, that guest_os.
// A candidate without a CONTEXT line matches any vendor. No match, or several, is a
// *DockerfileError naming the candidates and what each says.
func ResolveDockerfile(root, model, prefix, vendor, guestOS string) (string, error) {
	if prefix == "" {
		return "", &DockerfileError{Model: model, Prefix: `""`, Msg: "the model names no dockerfile"}
	}
	base := filepath.Join(root, filepath.FromSlash(prefix))
	matches, err := filepath.Glob(base + ".*Dockerfile")
	if err != nil {
		return "", &DockerfileError{Model: model, Prefix: prefix, Msg: err.Error()}
	}
	if st, err := os.Stat(base); err == nil && st.Mode().IsRegular() {
		matches = append(matches, base) // the prefix may name a Dockerfile itself
	}
	sort.Strings(matches)
	if len(matches) == 0 {
		return "", &DockerfileError{Model: model, Prefix: prefix, Msg: fmt.Sprintf("no file matches %s.*Dockerfile", base)}
	}
	var picked, described []string
	for _, m := range matches {
		data, err := safefile.ReadFile(m, 16<<20)
		if err != nil {
			described = append(described, fmt.Sprintf("%s: %v", filepath.Base(m), err))
			continue
		}
		ctx, has, err := ParseContextLine(data)
		if err != nil {
			return "", &DockerfileError{Model: model, Prefix: prefix, Msg: fmt.Sprintf("%s: %v", m, err)}
		}
		vendorMismatch := has && !strings.EqualFold(ctx["gpu_vendor"], vendor) && ctx["gpu_vendor"] != ""
		osMismatch := has && guestOS != "" && ctx["guest_os"] != "" && !strings.EqualFold(ctx["guest_os"], guestOS)
		desc := filepath.Base(m) + ": no CONTEXT line"
		if has {
			desc = fmt.Sprintf("%s: gpu_vendor %s, guest_os %s", filepath.Base(m), orNone(ctx["gpu_vendor"]), orNone(ctx["guest_os"]))
		}
		described = append(described, desc)
		if !vendorMismatch && !osMismatch {
			picked = append(picked, m)
		}
	}
	what := "gpu_vendor " + strings.ToUpper(vendor)
	if guestOS != "" {
		what += " and guest_os " + strings.ToUpper(guestOS)
	}
	switch len(picked) {
	case 1:
		return picked[0], nil
	case 0:
		return "", &DockerfileError{Model: model, Prefix: prefix, Msg: "no Dockerfile is for " + what, Candidates: described}
	}
	return "", &DockerfileError{Model: model, Prefix: prefix, Candidates: described,
		Msg: fmt.Sprintf("%d Dockerfiles are for %s: give guest_os, or a CONTEXT line to each", len(picked), what)}
}

func orNone(s string) string {
	if s == "" {
		return "(any)"
	}
	return s
}
