package jobdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// The reference job of each manifest (by its name) is recorded in the shared directory:
// jobs/.references/<manifest>.json names the job that compare JOB, collect --check and the
// report judge later jobs of that manifest against. The job folders stay the truth: the file
// holds only the job's id and attempt, and whoever reads it checks the job still exists.

// ReferencesFolder is the folder of the reference files, under jobs/.
const ReferencesFolder = ".references"

// Reference is a manifest's reference job.
type Reference struct {
	Version  int       `json:"version"`
	Manifest string    `json:"manifest"`
	Job      string    `json:"job"`
	Attempt  int       `json:"attempt"`
	SetAt    time.Time `json:"setAt"`
	SetBy    string    `json:"setBy,omitempty"` // the user who set it
}

// manifestNameRE is a manifest's name as the manifest allows it.
var manifestNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })

// ReferenceFile is the reference file of the manifest name.
func (l Layout) ReferenceFile(manifest string) string {
	return filepath.Join(l.Jobs(), ReferencesFolder, manifest+".json")
}

// ReferenceError is a manifest name that cannot have a reference file (exit 4).
type ReferenceError struct{ Msg string }

func (e *ReferenceError) Error() string      { return e.Msg }
func (e *ReferenceError) InvalidInput() bool { return true }

func checkManifestName(name string) error {
	if !manifestNameRE().MatchString(name) || name == "." || name == ".." {
		return &ReferenceError{Msg: fmt.Sprintf("%q is not a manifest name (lower-case letters, digits, '.', '_', '-'; at most 63)", name)}
	}
	return nil
}

// SetReference records r as its manifest's reference, replacing the one before (atomically:
// a reader sees the old file or the new one).
func (l Layout) SetReference(r Reference) error {
	if err := checkManifestName(r.Manifest); err != nil {
		return err
	}
	r.Version = 1
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// Opened, not checked then written by path: the folder written into is the one checked
	// (a link or a file swapped in at its name is refused).
	dir := filepath.Join(l.Jobs(), ReferencesFolder)
	if err := os.MkdirAll(l.Jobs(), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", l.Jobs(), err)
	}
	jobs, err := safefile.OpenDir(l.Jobs())
	if err != nil {
		return err
	}
	defer jobs.Close()
	d, _, err := safefile.MkdirAt(jobs, ReferencesFolder, 0o755)
	if err != nil {
		return fmt.Errorf("%s: %w (a link or a file took its place: remove it)", dir, err)
	}
	defer d.Close()
	return atomicfile.WriteFileAt(d, filepath.Base(l.ReferenceFile(r.Manifest)), append(data, '\n'), 0o644)
}

// ForeignReferenceError is a reference file that is not the caller's own (another user's,
// or one others may write): it is not believed.
type ForeignReferenceError struct {
	Path  string
	Owner int
}

func (e *ForeignReferenceError) Error() string {
	return fmt.Sprintf("%s is not this user's own file (owner uid %d, or writable by others): a reference is believed only when you set it; set yours with benchctl reference set JOB", e.Path, e.Owner)
}

// InvalidInput marks the error as bad input (exit 4).
func (e *ForeignReferenceError) InvalidInput() bool { return true }

// ReadReference is the manifest's reference, or nil when it has none.
func (l Layout) ReadReference(manifest string) (*Reference, error) {
	if err := checkManifestName(manifest); err != nil {
		return nil, err
	}
	p := l.ReferenceFile(manifest)
	f, err := safefile.OpenNoFollow(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A reference another user wrote (or may write) could name their own job as this
	// user's baseline: only the caller's own is believed.
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if uid, ok := safefile.Owner(st); ok && !safefile.OwnedPrivately(st) {
		return nil, &ForeignReferenceError{Path: p, Owner: uid}
	}
	var rd safefile.Reader
	data, err := rd.ReadOpen(f, 64<<10)
	if err != nil {
		return nil, err
	}
	var r Reference
	if err := decodeFile(p, data, &r); err != nil {
		return nil, err
	}
	if r.Manifest != manifest || r.Job == "" || r.Attempt < 0 {
		return nil, fmt.Errorf("%s: names job %q of manifest %q: not a reference benchctl wrote; set it again (benchctl reference set JOB)", p, r.Job, r.Manifest)
	}
	return &r, nil
}

// ClearReference removes the manifest's reference; none is not an error.
func (l Layout) ClearReference(manifest string) error {
	if err := checkManifestName(manifest); err != nil {
		return err
	}
	err := os.Remove(l.ReferenceFile(manifest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
