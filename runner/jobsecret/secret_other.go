//go:build !unix

package jobsecret

import "os"

func checkSecretFile(*os.File, string) error { return nil }
