//go:build !unix

package runner

import "os"

func checkSecretFile(*os.File, string) error { return nil }
