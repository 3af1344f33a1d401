package safefile

import (
	"errors"
	"io"
	"os"
)

// CopyNew copies in (an open regular file) to a new file at to with perm: whatever is at
// to already (a file, or a link a co-writer planted) is removed first and never written
// through. At most limit bytes are copied (0: no bound); a longer in is a *TooLargeError
// and the copy is removed.
func CopyNew(in *os.File, to string, perm os.FileMode, limit int64) error {
	os.Remove(to)
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, perm)
	if err != nil {
		return err
	}
	var r io.Reader = in
	if limit > 0 {
		r = io.LimitReader(in, limit+1)
	}
	n, err := io.Copy(out, r)
	if err == nil && limit > 0 && n > limit {
		err = &TooLargeError{Path: in.Name(), Limit: limit}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(to)
		return err
	}
	return nil
}

// IsNotRegular reports whether err says a file is not a regular one (Open's refusal).
func IsNotRegular(err error) bool {
	var nr *NotRegularError
	return errors.As(err, &nr)
}
