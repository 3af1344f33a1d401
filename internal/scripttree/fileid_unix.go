//go:build unix

package scripttree

import (
	"os"
	"syscall"
)

// fileID is a file's device and inode.
func fileID(st os.FileInfo) [2]uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(s.Dev), s.Ino}
	}
	return [2]uint64{}
}
