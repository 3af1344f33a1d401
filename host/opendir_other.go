//go:build !unix

package host

import "os"

// openDir opens a folder (the caller has checked that it is one).
func openDir(path string) (*os.File, error) { return os.Open(path) }
