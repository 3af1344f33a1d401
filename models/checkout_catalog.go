package models

import (
	"os"
	"path/filepath"
)

// CheckoutCatalog is the catalog a MAD checkout in dir has ("." when dir is empty): the
// absolute path of its models.json, which the commands read when no catalog is given (run
// and build --tags, models list). found is false when dir has no models.json or a folder by
// that name (anything else is left for the catalog's reader to refuse); err is set only when
// dir's absolute path cannot be had.
func CheckoutCatalog(dir string) (path string, found bool, err error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(abs, "models.json")
	st, err := os.Stat(path)
	return path, err == nil && !st.IsDir(), nil
}
