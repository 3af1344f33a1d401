//go:build !unix

package image

import "os"

// pruneLockFlags open a build lock file that prune tries to take: never created.
const pruneLockFlags = os.O_RDONLY
