package jobdir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// Files benchctl submit keeps in jobs/.submit for one submission: the sbatch script and
// the job channel's secret (0600), named by a random token, and, once sbatch has given the
// job its id, <id>.job naming the token, so that the end of the job can find them.
const (
	scriptSuffix    = ".sh"
	secretSuffix    = ".secret"
	submittedSuffix = ".job"
)

// SubmitFiles are one submission's files.
type SubmitFiles struct {
	Script, Secret string
}

// SubmitFiles are the files of the submission with that token.
func (l Layout) SubmitFiles(token string) SubmitFiles {
	return SubmitFiles{Script: filepath.Join(l.Submit(), token+scriptSuffix), Secret: filepath.Join(l.Submit(), token+secretSuffix)}
}

// submitted is the record of which token a job id was submitted with.
func (l Layout) submitted(jobID string) (string, error) {
	if jobID == "" || strings.ContainsAny(jobID, `/\`) || strings.HasPrefix(jobID, ".") {
		return "", fmt.Errorf("%q is not a job id", jobID)
	}
	return filepath.Join(l.Submit(), jobID+submittedSuffix), nil
}

// RecordSubmitted notes that job jobID was submitted with token's files.
func (l Layout) RecordSubmitted(token, jobID string) error {
	p, err := l.submitted(jobID)
	if err != nil {
		return err
	}
	sub, err := l.openSubmit()
	if err != nil {
		return err
	}
	defer sub.Close()
	return atomicfile.WriteFileAt(sub, filepath.Base(p), []byte(token+"\n"), 0o600)
}

// RemoveSubmitted removes a job's submission files (its secret above all) once the job has
// ended for good: nothing is left that could read them. Missing files are not an error.
// A job requeued after this cannot start again (its script reads the secret): submit it
// anew.
func (l Layout) RemoveSubmitted(jobID string) error {
	p, err := l.submitted(jobID)
	if err != nil {
		return err
	}
	sub, err := l.openSubmitted()
	if sub == nil {
		return err // nil when nothing was ever submitted here
	}
	defer sub.Close()
	_, err = removeSubmitted(sub, filepath.Base(p))
	return err
}

// removeSubmitted removes the record name of a job and the files of its token, relative
// to the checked folder sub, and returns the token.
func removeSubmitted(sub *os.File, name string) (string, error) {
	data, err := readAt(sub, name, 4<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var errs []error
	token := strings.TrimSpace(string(data))
	if validToken(token) {
		errs = append(errs, safefile.RemoveAt(sub, token+secretSuffix), safefile.RemoveAt(sub, token+scriptSuffix))
	}
	errs = append(errs, safefile.RemoveAt(sub, name))
	return token, errors.Join(errs...)
}

// readAt reads the regular file name of dir, at most limit bytes (never a link or FIFO).
func readAt(dir *os.File, name string, limit int64) ([]byte, error) {
	f, err := safefile.OpenAt(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r safefile.Reader
	data, err := r.ReadOpen(f, limit)
	return bytes.Clone(data), err
}

func validToken(t string) bool {
	return t != "" && !strings.ContainsAny(t, `/\.`) && len(t) <= 64
}

// maxPruneAsks bounds how many jobs one prune asks the scheduler about (each question can
// take seconds); the rest wait for the next prune.
const maxPruneAsks = 50

// PruneSubmitted removes the submission files older than maxAge whose job is not active
// (active asks the scheduler; it is called only for those old files), and the files of
// submissions that never got a job id (sbatch failed) once older than maxAge. It returns
// how many submissions it removed.
func (l Layout) PruneSubmitted(maxAge time.Duration, now time.Time, active func(jobID string) bool) (int, error) {
	sub, err := l.openSubmitted()
	if sub == nil {
		return 0, err
	}
	defer sub.Close()
	ents, err := sub.ReadDir(-1)
	if err != nil {
		return 0, err
	}
	old := func(e fs.DirEntry) bool {
		info, err := e.Info()
		return err == nil && now.Sub(info.ModTime()) > maxAge
	}
	claimed := map[string]bool{} // tokens of jobs still recorded, or removed with their job
	removed, asked := 0, 0
	var errs []error
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), submittedSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if old(e) && asked < maxPruneAsks {
			asked++
			if !active(id) {
				token, err := removeSubmitted(sub, e.Name())
				claimed[token] = true
				if err != nil {
					errs = append(errs, err)
				} else {
					removed++
				}
				continue
			}
		}
		if data, err := readAt(sub, e.Name(), 4<<10); err == nil {
			claimed[strings.TrimSpace(string(data))] = true
		}
	}
	for _, e := range ents { // secrets of submissions that never got a job id
		token, ok := strings.CutSuffix(e.Name(), secretSuffix)
		if !ok || claimed[token] || !old(e) || !validToken(token) {
			continue
		}
		errs = append(errs, safefile.RemoveAt(sub, token+secretSuffix), safefile.RemoveAt(sub, token+scriptSuffix))
		removed++
	}
	return removed, errors.Join(errs...)
}
