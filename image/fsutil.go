package image

import (
	"path/filepath"
)

// relInside returns target relative to dir when target is inside dir.
func relInside(dir, target string) (string, bool) {
	rel, err := filepath.Rel(dir, target)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
