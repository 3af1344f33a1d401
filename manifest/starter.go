package manifest

import (
	"regexp"
	"strings"
	"sync"
)

var (
	nonName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9._-]+`) })
	badSeps  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[._-]*[.][._-]*|_{3,}|[_-]*-[_-]*_[_-]*|_-[_-]*`) }) // runs of separators an image name cannot have
	trailing = "-._"
)

// SuggestName makes a valid manifest name from any text (a folder name, say).
func SuggestName(s string) string {
	n := nonName().ReplaceAllString(strings.ToLower(s), "-")
	n = badSeps().ReplaceAllStringFunc(n, func(run string) string {
		if strings.Contains(run, ".") {
			return "."
		}
		return "-"
	})
	n = strings.Trim(n, trailing)
	if n == "" {
		n = "benchmark"
	}
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], trailing)
	}
	return n
}

// ValidName reports whether name is a valid manifest name: lower-case letters, digits,
// '.', '_', '-', at most 63, and one that can name an image (benchctl/<name>).
func ValidName(name string) bool {
	return nameRE().MatchString(name) && imageNameRE().MatchString(name) && len(name) <= 63
}
