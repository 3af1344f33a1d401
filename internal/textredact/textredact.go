// Package textredact hides secrets in free text that benchctl quotes: known secret values
// and, known or not, the value of anything the text names like a credential.
package textredact

import (
	"regexp"
	"slices"
	"strings"
)

// MinRedactLen is the shortest secret value that Redactor searches for in free text. A
// shorter one ("abc", "1") would turn every occurrence of those letters or digits in a log
// into Redacted, hiding the text and telling a reader the secret's length and where its
// letters stand; it is still hidden where the text names it (HF_TOKEN=abc, --token abc).
const MinRedactLen = 4

// Redactor hides secrets in free text that benchctl quotes (a container's log lines and
// process table in diagnostics, the excerpts and reasons of a report): every known secret
// value of MinRedactLen bytes or more, wherever it stands (each line of a value of several
// lines too), and, known or not, the value of anything the text names like a credential
// (CredentialLike): NAME=value, NAME: value, "name": "value", --name value, --name=value,
// "Bearer value", and the password of a URL (https://user:value@host). Each becomes
// Redacted. The zero value and nil know no values and redact by those patterns only.
type Redactor struct {
	values *strings.Replacer
}

// New is a Redactor that also hides the given secret values.
func New(values ...string) *Redactor {
	var vs []string
	for _, v := range values {
		for _, l := range append(strings.Split(v, "\n"), v) {
			if l = strings.TrimSpace(l); len(l) >= MinRedactLen && !slices.Contains(vs, l) {
				vs = append(vs, l)
			}
		}
	}
	if len(vs) == 0 {
		return &Redactor{}
	}
	// Longest first: where two values start at one place, the longer is hidden whole.
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vs))
	for _, v := range vs {
		pairs = append(pairs, v, Redacted)
	}
	return &Redactor{values: strings.NewReplacer(pairs...)}
}

var (
	// NAME=value, NAME: value, "NAME": "value", --name=value (the name checked apart).
	assignRE = regexp.MustCompile(`(["']?)(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)(["']?[ \t]*[=:][ \t]*)("[^"]*"|'[^']*'|[^\s"',;&]+)`)
	// --name value, -name value.
	flagRE   = regexp.MustCompile(`(-{1,2}[A-Za-z][A-Za-z0-9_-]*)([ \t]+)("[^"]*"|'[^']*'|[^\s"'-][^\s"']*)`)
	bearerRE = regexp.MustCompile(`(?i)\b(bearer)([ \t]+)([A-Za-z0-9._~+/=-]{8,})`)
	// The password of scheme://user:password@host.
	userinfoRE = regexp.MustCompile(`(://[^/\s:@]*:)([^/\s@]+)(@)`)
)

// credentialName reports whether a name in text (HF_TOKEN, --hf-token, api.key) is named
// like a credential.
func credentialName(n string) bool {
	n = strings.TrimLeft(n, "-")
	n = strings.NewReplacer("-", "_", ".", "_").Replace(n)
	return n != "" && CredentialLike(n)
}

// Redact returns s with its secrets hidden.
func (t *Redactor) Redact(s string) string {
	if t != nil && t.values != nil {
		s = t.values.Replace(s)
	}
	s = replaceGroup(s, assignRE, 2, 4)
	s = replaceGroup(s, flagRE, 1, 3)
	s = bearerRE.ReplaceAllString(s, "${1}${2}"+Redacted)
	return userinfoRE.ReplaceAllString(s, "${1}"+Redacted+"${3}")
}

// RedactAll redacts every string of ss in place, and returns it.
func (t *Redactor) RedactAll(ss []string) []string {
	for i, s := range ss {
		ss[i] = t.Redact(s)
	}
	return ss
}

// replaceGroup replaces submatch value of every match of re whose submatch name is named
// like a credential with Redacted (quotes around the value are kept).
func replaceGroup(s string, re *regexp.Regexp, name, value int) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if !credentialName(s[m[2*name]:m[2*name+1]]) {
			continue
		}
		vs, ve := m[2*value], m[2*value+1]
		v := s[vs:ve]
		if v == Redacted {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			vs, ve = vs+1, ve-1
		}
		b.WriteString(s[last:vs])
		b.WriteString(Redacted)
		last = ve
	}
	b.WriteString(s[last:])
	return b.String()
}

// CredentialLike reports whether a variable's name says it holds a credential: its last
// _-separated word is TOKEN, SECRET, PASSWORD, ... or it ends in API_KEY, ACCESS_KEY,
// SECRET_KEY or PRIVATE_KEY (HF_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD; not
// TOKENIZERS_PARALLELISM, MAX_TOKEN, TOKEN_LEN, HF_TOKEN_PATH, AUTHOR or NUM_PASS).
func CredentialLike(name string) bool {
	words := strings.Split(strings.ToUpper(name), "_")
	last := words[len(words)-1]
	if len(words) > 1 {
		switch words[len(words)-2] {
		case "MAX", "MIN", "NUM", "N": // a count of tokens, not a token
			return false
		}
	}
	switch last {
	case "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "APIKEY", "AUTH":
		return true
	case "KEY":
		if len(words) > 1 {
			switch words[len(words)-2] {
			case "API", "ACCESS", "SECRET", "PRIVATE":
				return true
			}
		}
	}
	return false
}

// Redacted stands where a secret was.
const Redacted = "***"
