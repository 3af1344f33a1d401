//go:build !unix

package safefile

import "os"

// Open opens a regular file a user named.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, What: describe(st.Mode())}
	}
	return os.Open(path)
}

// OpenNoFollow opens a regular file that is not a link.
func OpenNoFollow(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, What: describe(st.Mode())}
	}
	return os.Open(path)
}

// OpenBeneath opens rel inside root (os.Root keeps every component inside it).
func OpenBeneath(root, rel string) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(rel)
}

func openNoFollowRaw(path string) (rawFile, error) { return OpenNoFollow(path) }

func openBeneathRaw(root, rel string) (rawFile, error) { return OpenBeneath(root, rel) }

// Owner is not known where files have no Unix owner.
func Owner(os.FileInfo) (uid int, ok bool) { return 0, false }

// noFollow is O_NOFOLLOW where the system has it.
const noFollow = 0
