package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// JobDir is one attempt's folder of a job: jobs/<id> for attempt 0, jobs/<id>.<n> after the
// n-th requeue.
type JobDir struct {
	Path     string
	JobID    string
	Attempt  int
	Attempts []int // every attempt found, ascending
}

// Latest reports whether this is the job's newest attempt.
func (d JobDir) Latest() bool {
	return len(d.Attempts) == 0 || d.Attempt == d.Attempts[len(d.Attempts)-1]
}

// JobDirName is the folder name of a job attempt under jobs/.
func JobDirName(jobID string, attempt int) string {
	if attempt == 0 {
		return jobID
	}
	return jobID + "." + strconv.Itoa(attempt)
}

// maxListedJobs is how many job ids a not-found error lists.
const maxListedJobs = 20

// FindJob locates a job's folder in the shared directory: the newest attempt when attempt
// is negative, else that attempt. A missing shared directory, job or attempt is a
// *JobNotFoundError (invalid input) that lists what exists.
func FindJob(sharedDir, jobID string, attempt int) (JobDir, error) {
	if jobID == "" || jobID == "." || jobID == ".." || strings.ContainsAny(jobID, `/\`) || strings.TrimSpace(jobID) != jobID {
		return JobDir{}, &JobNotFoundError{JobID: jobID, Msg: fmt.Sprintf("%q is not a job id", jobID)}
	}
	jobs := filepath.Join(sharedDir, "jobs")
	attempts, others, err := scanJobs(jobs, jobID)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return JobDir{}, &JobNotFoundError{JobID: jobID, SharedDir: sharedDir,
				Msg: fmt.Sprintf("no jobs folder in the shared directory %s (is it the BENCHCTL_SHARED_DIR the job ran with?)", sharedDir)}
		}
		return JobDir{}, fmt.Errorf("reading %s: %w", jobs, err)
	}
	if len(attempts) == 0 {
		return JobDir{}, &JobNotFoundError{JobID: jobID, SharedDir: sharedDir, Known: others,
			Msg: fmt.Sprintf("no job %s in %s", jobID, jobs)}
	}
	d := JobDir{JobID: jobID, Attempts: attempts, Attempt: attempts[len(attempts)-1]}
	if attempt >= 0 {
		if !slices.Contains(attempts, attempt) {
			return JobDir{}, &JobNotFoundError{JobID: jobID, SharedDir: sharedDir,
				Msg: fmt.Sprintf("job %s has no attempt %d (attempts found: %s)", jobID, attempt, joinInts(attempts))}
		}
		d.Attempt = attempt
	}
	d.Path = filepath.Join(jobs, JobDirName(jobID, d.Attempt))
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
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			if !isDirEntry(jobs, e) {
				continue
			}
			id, att := splitJobDirName(e.Name())
			switch {
			case e.Name() == jobID:
				id, att = jobID, 0 // asked for by its exact folder name
			case id == jobID && att > 0 && jobJSONNames(filepath.Join(jobs, e.Name()), e.Name()):
				continue // a job whose own id ends in .<n>, not an attempt of jobID
			}
			if id == jobID {
				attempts = append(attempts, att)
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
	slices.Sort(attempts)
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
	data, err := os.ReadFile(filepath.Join(dir, "job.json"))
	if err != nil {
		return false
	}
	var j struct {
		Job string `json:"job"`
	}
	return json.Unmarshal(data, &j) == nil && j.Job == id
}

// splitJobDirName splits "123.2" into ("123", 2); a name without a numeric suffix is attempt 0.
func splitJobDirName(name string) (string, int) {
	if i := strings.LastIndexByte(name, '.'); i > 0 && allDigits(name[i+1:]) {
		if n, err := strconv.Atoi(name[i+1:]); err == nil && n > 0 {
			return name[:i], n
		}
	}
	return name, 0
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
