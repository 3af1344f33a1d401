package jobdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/textsafe"
)

// maxListedJobs is how many job ids a not-found error lists.
const maxListedJobs = 20

// Find locates a job's folder: the newest attempt when attempt is negative, else that
// attempt. A missing shared directory, job or attempt is a *JobNotFoundError (invalid
// input) that lists what exists.
func (l Layout) Find(jobID string, attempt int) (Dir, error) {
	sharedDir := l.Shared
	if jobID == "" || jobID == "." || jobID == ".." || strings.ContainsAny(jobID, `/\`) || strings.TrimSpace(jobID) != jobID {
		return Dir{}, &JobNotFoundError{JobID: jobID, Msg: fmt.Sprintf("%q is not a job id", jobID)}
	}
	jobs := l.Jobs()
	attempts, others, err := scanJobs(jobs, jobID)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Dir{}, &JobNotFoundError{JobID: jobID, SharedDir: sharedDir,
				Msg: fmt.Sprintf("no jobs folder in the shared directory %s (is it the BENCHCTL_SHARED_DIR the job ran with?)", sharedDir)}
		}
		return Dir{}, fmt.Errorf("reading %s: %w", jobs, err)
	}
	if len(attempts) == 0 {
		return Dir{}, &JobNotFoundError{JobID: jobID, SharedDir: sharedDir, Known: others,
			Msg: fmt.Sprintf("no job %s in %s", jobID, jobs)}
	}
	d := Dir{JobID: jobID, Attempts: attempts, Attempt: attempts[len(attempts)-1]}
	if attempt >= 0 {
		if !slices.Contains(attempts, attempt) {
			return Dir{}, &JobNotFoundError{JobID: jobID, SharedDir: sharedDir,
				Msg: fmt.Sprintf("job %s has no attempt %d (attempts found: %s)", jobID, attempt, joinInts(attempts))}
		}
		d.Attempt = attempt
	}
	d.Path = filepath.Join(jobs, Name(jobID, d.Attempt))
	return d, nil
}

// scanJobs reads jobs/ in batches and returns the attempts of jobID and, for error
// messages, up to maxListedJobs other job ids (newest-looking first).
func scanJobs(jobs, jobID string) (attempts []int, others []string, err error) {
	f, err := os.Open(jobs)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var mine []attemptFolder
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			if !IsDirEntry(jobs, e) {
				continue
			}
			id, att := SplitName(e.Name())
			switch {
			case e.Name() == jobID:
				id, att = jobID, 0 // asked for by its exact folder name
			case id == jobID && att > 0 && jobJSONNames(filepath.Join(jobs, e.Name()), e.Name()):
				continue // a job whose own id ends in .<n>, not an attempt of jobID
			}
			if id == jobID {
				mine = append(mine, newAttemptFolder(jobs, e, att))
			} else if !seen[id] && len(seen) < 10*maxListedJobs {
				seen[id] = true
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	attempts = jobAttempts(mine)
	for id := range seen {
		others = append(others, id)
	}
	slices.SortFunc(others, func(a, b string) int { // numeric ids descending, then names
		na, ea := strconv.Atoi(a)
		nb, eb := strconv.Atoi(b)
		switch {
		case ea == nil && eb == nil:
			return nb - na
		case ea == nil:
			return -1
		case eb == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(others) > maxListedJobs {
		others = others[:maxListedJobs]
	}
	return attempts, others, nil
}

// jobJSONNames reports whether the job.json in dir names the job id (its "job" field).
func jobJSONNames(dir, id string) bool {
	j, err := ReadJob(filepath.Join(dir, JobFile))
	return err == nil && j.Job == id
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// IsDirEntry reports whether an entry of parent is a folder, or a symbolic link to one (a
// job or node folder linked in from elsewhere): what listing jobs/ and nodes/ counts.
func IsDirEntry(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && st.IsDir()
}

// JobNotFoundError is a job (or attempt, or shared directory) that is not there: invalid
// input, exit 4. Known lists job ids that do exist.
type JobNotFoundError struct {
	JobID     string
	SharedDir string
	Msg       string
	Known     []string
}

// Error names the job ids found, which are folder names anyone who can write to jobs/
// chose: their control characters are escaped (textsafe.Line).
func (e *JobNotFoundError) Error() string {
	if len(e.Known) == 0 {
		if e.SharedDir != "" && strings.HasPrefix(e.Msg, "no job ") {
			return textsafe.Line(e.Msg + " (the jobs folder is empty)")
		}
		return textsafe.Line(e.Msg)
	}
	return textsafe.Line(fmt.Sprintf("%s; jobs there: %s", e.Msg, strings.Join(e.Known, ", ")))
}

// InvalidInput marks the error as bad input (exit 4).
func (e *JobNotFoundError) InvalidInput() bool { return true }

// Listed is a job in the jobs folder, for completion and listings.
type Listed struct {
	ID       string
	Modified time.Time // of its newest attempt's folder
}

// List returns the jobs in the jobs folder, most recently modified first; requeue attempts
// fold into their job, and hidden folders (.submit) are left out. A missing jobs folder
// is an empty list.
func (l Layout) List() ([]Listed, error) {
	ents, err := os.ReadDir(l.Jobs())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	byID := map[string]int{}
	var out []Listed
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !IsDirEntry(l.Jobs(), e) {
			continue
		}
		id, att := SplitName(e.Name())
		if att > 0 {
			if st, err := os.Stat(filepath.Join(l.Jobs(), id)); err != nil || !st.IsDir() {
				id = e.Name() // no job of that id: a job whose own id ends in .<n>
			}
		}
		var mod time.Time
		if info, err := e.Info(); err == nil {
			mod = info.ModTime()
		}
		if i, ok := byID[id]; ok {
			if mod.After(out[i].Modified) {
				out[i].Modified = mod
			}
			continue
		}
		byID[id] = len(out)
		out = append(out, Listed{ID: id, Modified: mod})
	}
	slices.SortStableFunc(out, func(a, b Listed) int { return b.Modified.Compare(a.Modified) })
	return out, nil
}

// NewestAttempts is the newest attempt's folder of every job in the jobs folder, in one
// read of it, by the rule Find keeps (a later attempt only when it is a folder of the first
// attempt's owner, not a link), and only the jobs whose first attempt owner owns (owner < 0:
// every job). History and the baselines of compare take their jobs from here: a co-writer's
// planted job folder is not the caller's history.
func (l Layout) NewestAttempts(owner int) ([]Dir, error) {
	jobs := l.Jobs()
	ents, err := os.ReadDir(jobs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	byID := map[string][]attemptFolder{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !IsDirEntry(jobs, e) {
			continue
		}
		id, n := SplitName(e.Name())
		byID[id] = append(byID[id], newAttemptFolder(jobs, e, n))
	}
	out := make([]Dir, 0, len(byID))
	for id, as := range byID {
		kept := jobAttempts(as)
		if owner >= 0 && as[0].uid != owner { // as is sorted by jobAttempts: as[0] is the first attempt
			continue
		}
		out = append(out, l.Job(id, kept[len(kept)-1]))
	}
	slices.SortFunc(out, func(a, b Dir) int { return strings.Compare(a.JobID, b.JobID) })
	return out, nil
}

// attemptFolder is an entry of the jobs folder that names an attempt of a job.
type attemptFolder struct {
	attempt int
	uid     int // its owner (the link's target's for a link); -1 when unknown
	link    bool
}

func newAttemptFolder(jobs string, e fs.DirEntry, attempt int) attemptFolder {
	a := attemptFolder{attempt: attempt, uid: -1, link: e.Type()&fs.ModeSymlink != 0}
	if st, err := os.Stat(filepath.Join(jobs, e.Name())); err == nil {
		if u, ok := safefile.Owner(st); ok {
			a.uid = u
		}
	}
	return a
}

// jobAttempts is the rule of what a job's attempts are, for Find and NewestAttempts alike:
// the first attempt's folder, and the later ones that are folders themselves (not links) of
// the same owner. A co-writer's planted jobs/<id>.<n>, or a link by that name, is never
// taken for the newest attempt (or written into by collect). It sorts as by attempt and
// returns the attempts kept, ascending (none for none).
func jobAttempts(as []attemptFolder) []int {
	slices.SortFunc(as, func(a, b attemptFolder) int { return a.attempt - b.attempt })
	var kept []int
	for i, a := range as {
		if i == 0 || (!a.link && a.uid == as[0].uid) {
			kept = append(kept, a.attempt)
		}
	}
	return kept
}
