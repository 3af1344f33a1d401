package jobdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/benchctl/benchctl/internal/safefile"
)

// openSubmit creates jobs/.submit (0700) unless it exists, and opens it: it holds the
// secrets of submitted jobs, so it must be a real folder (not a link) of this user that
// nobody else may use (no group or other bits). One that fails these checks is refused,
// never used: someone else could read a secret there, or plant one they know.
func (l Layout) openSubmit() (*os.File, error) {
	shared, err := l.openShared(true)
	if err != nil {
		return nil, err
	}
	defer shared.Close()
	jobs, _, err := safefile.MkdirAt(shared, JobsFolder, folderMode)
	if err != nil {
		return nil, err
	}
	defer jobs.Close()
	sub, _, err := safefile.MkdirAt(jobs, SubmitFolder, 0o700)
	if err != nil {
		return nil, err
	}
	if err := safefile.CheckPrivate(sub, os.Geteuid()); err != nil {
		sub.Close()
		return nil, fmt.Errorf("%w; remove it (benchctl submit creates it anew), or use a shared directory of your own (--shared-dir)", err)
	}
	return sub, nil
}

// openSubmitted opens jobs/.submit to remove what is in it: never through a link, and only
// a private folder of this user's (what openSubmit makes). (nil, nil) when there is none.
func (l Layout) openSubmitted() (*os.File, error) {
	shared, err := l.openShared(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer shared.Close()
	jobs, err := safefile.OpenDirAt(shared, JobsFolder)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer jobs.Close()
	sub, err := safefile.OpenDirAt(jobs, SubmitFolder)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w; benchctl removes nothing there: remove it yourself", err)
	}
	if err := safefile.CheckPrivate(sub, os.Geteuid()); err != nil {
		sub.Close()
		return nil, fmt.Errorf("%w; benchctl removes nothing there: remove it, or use a shared directory of your own (--shared-dir)", err)
	}
	return sub, nil
}

// WriteSubmission creates a submission's secret (0600) and script (0700) in jobs/.submit,
// each a new file (O_EXCL: a file or link planted under the token's name is an error,
// never written through), through the checked folder's descriptor.
func (l Layout) WriteSubmission(token string, secret, script []byte) (SubmitFiles, error) {
	files := l.SubmitFiles(token)
	if !validToken(token) {
		return files, fmt.Errorf("%q is not a submission token", token)
	}
	sub, err := l.openSubmit()
	if err != nil {
		return files, err
	}
	defer sub.Close()
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{token + secretSuffix, secret, 0o600}, {token + scriptSuffix, script, 0o700}} {
		w, err := safefile.CreateNewAt(sub, f.name, f.perm)
		if err != nil {
			return files, err
		}
		_, werr := w.Write(f.data)
		if serr := w.Sync(); werr == nil {
			werr = serr
		}
		if cerr := w.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return files, fmt.Errorf("writing %s: %w", w.Name(), werr)
		}
	}
	return files, nil
}
