//go:build unix

package jobsecret

import (
	"fmt"
	"os"
	"syscall"
)

// checkSecretFile refuses a secret file of another user, or one that group or others may
// read or write.
func checkSecretFile(f *os.File, p string) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(sys.Uid) != uid {
		return &secretFileError{path: p, what: fmt.Sprintf("owned by uid %d, not by this user (uid %d)", sys.Uid, uid)}
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return &secretFileError{path: p, what: fmt.Sprintf("mode %04o: group or others may read or write it (it must be 0600)", perm)}
	}
	return nil
}
