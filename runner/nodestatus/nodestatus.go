// Package nodestatus keeps a node's status.json while its run goes (package runner): its
// phases and benchmarks as progress (atomic, not synced, changes coalesced), trial records
// moved to the node's trial log, and the node's end written at once and synced.
package nodestatus

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// The status.json schema is jobdir's.
type (
	Status          = jobdir.Status
	PhaseStatus     = jobdir.PhaseStatus
	BenchmarkStatus = jobdir.BenchmarkStatus
)

// statusCoalesce is how long a progress write of status.json waits for the changes that
// follow it: the phases and records a node goes through in its first tens of milliseconds
// (context, image, ready, run, the benchmark started: seven writes before a warm run's
// container is created) are one or two writes, not one each (each a temporary file and a
// rename: milliseconds on a shared file system). The node's end is written at once, and
// synced.
const statusCoalesce = 20 * time.Millisecond

// statusFile keeps a Status and rewrites the file after every change (progress: at most
// statusCoalesce later). A write that fails is logged (once per distinct error) and kept:
// Run reports it.
type File struct {
	mu      sync.Mutex
	node    *jobdir.NodeFolder // nil: nowhere to write
	s       Status
	log     *slog.Logger
	err     error // the first write error
	lastErr string
	// durable: the write in progress is synced to the disk (the node's end); the others
	// are progress, atomic but not synced (jobdir.NodeFolder.WriteStatusProgress)
	durable bool
	// flush is the progress write waiting (nil: none): a timer that writes the status as it
	// is then.
	flush *time.Timer
}

// New is the status of a node of the job (job, attempt, its rank and host, of world), to be
// written in node (nil: nowhere), started now.
func New(node *jobdir.NodeFolder, job string, attempt, rank int, host string, world int) *File {
	return &File{node: node, s: Status{Version: jobdir.StatusVersion, Job: job, Attempt: attempt, Rank: rank, Host: host,
		World: world, Outcome: jobdir.OutcomeRunning, StartedAt: time.Now().UTC(), Phases: []PhaseStatus{}, Benchmarks: []BenchmarkStatus{}}}
}

// SetLog is where write errors are logged (once per distinct error).
func (f *File) SetLog(log *slog.Logger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = log
}

// Snapshot is the status as it is now.
func (f *File) Snapshot() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s
}

// StartedAt is when the node started.
func (f *File) StartedAt() time.Time { return f.s.StartedAt } // set by New, never changed

func (f *File) Update(fn func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
	f.progressLocked()
}

// UpdateNow is update written at once (with the progress that was waiting): a benchmark's
// start, which a node killed during the benchmark must have left (collect says which
// benchmark it was in).
func (f *File) UpdateNow(fn func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
	if f.flush != nil {
		f.flush.Stop()
		f.flush = nil
	}
	f.writeLocked()
}

// progressLocked writes the status within statusCoalesce, with whatever changes come
// before then.
func (f *File) progressLocked() {
	if f.node == nil || f.flush != nil {
		return
	}
	f.flush = time.AfterFunc(statusCoalesce, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.flush == nil { // written meanwhile (the node's end)
			return
		}
		f.flush = nil
		f.writeLocked()
	})
}

// UpdateDurably is update whose write is synced to the disk: the node's end.
func (f *File) UpdateDurably(fn func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
	if f.flush != nil { // this write has the progress that was waiting
		f.flush.Stop()
		f.flush = nil
	}
	f.durable = true
	f.writeLocked()
	f.durable = false
}

// EndTrial moves the last record of the status, a trial run's that has ended, to the
// node's trial log and writes the status: a trial's record costs one line, and status.json
// keeps its size whatever the trials. A record the log could not take stays in the status
// (nothing is lost), and the error is returned.
func (f *File) EndTrial(fn func(*BenchmarkStatus)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := &f.s.Benchmarks[len(f.s.Benchmarks)-1]
	fn(last)
	err := f.appendTrialLocked(*last)
	if err == nil {
		f.s.Benchmarks = f.s.Benchmarks[:len(f.s.Benchmarks)-1]
		f.s.Trials++
	}
	f.progressLocked()
	return err
}

// AddTrial records a trial run that did not run (skipped) straight in the trial log.
func (f *File) AddTrial(rec BenchmarkStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.appendTrialLocked(rec)
	if err == nil {
		f.s.Trials++
	} else {
		f.s.Benchmarks = append(f.s.Benchmarks, rec)
	}
	f.progressLocked()
	return err
}

func (f *File) appendTrialLocked(rec BenchmarkStatus) error {
	if f.node == nil {
		return errors.New("no node folder")
	}
	_, err := f.node.AppendTrial(rec)
	return err
}

func (f *File) writeLocked() {
	if f.node == nil {
		return
	}
	write := f.node.WriteStatusProgress
	if f.durable {
		write = f.node.WriteStatus
	}
	err := write(&f.s)
	if err == nil {
		f.lastErr = ""
		return
	}
	if f.err == nil {
		f.err = err
	}
	if key := rootCause(err).Error(); key != f.lastErr { // temp file names differ; the cause does not
		f.lastErr = key
		if f.log != nil {
			f.log.Error("could not write status.json; the job folder will not show this node's progress", "path", f.node.Status(), "err", err)
		}
	}
}

// rootCause is the innermost error of err's chain (e.g. ENOTDIR under the path errors).
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// WriteErr is the first error writing the file, if any.
func (f *File) WriteErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Phase starts a phase and returns the function that ends it.
func (f *File) Phase(name string) func(err error) {
	f.Update(func(s *Status) {
		s.Phases = append(s.Phases, PhaseStatus{Name: name, StartedAt: time.Now().UTC(), Outcome: jobdir.OutcomeRunning})
	})
	return func(err error) {
		f.Update(func(s *Status) {
			for i := len(s.Phases) - 1; i >= 0; i-- {
				if s.Phases[i].Name == name && s.Phases[i].FinishedAt == nil {
					now := time.Now().UTC()
					s.Phases[i].FinishedAt = &now
					s.Phases[i].Outcome = jobdir.PhaseOK
					if err != nil {
						s.Phases[i].Outcome, s.Phases[i].Error = jobdir.PhaseFailed, err.Error()
					}
					return
				}
			}
		})
	}
}

// Finish records the node's outcome; it is idempotent (the first call wins).
func (f *File) Finish(outcome string, exit int, err error) {
	f.UpdateDurably(func(s *Status) {
		if s.FinishedAt != nil {
			return
		}
		now := time.Now().UTC()
		s.FinishedAt, s.Outcome, s.ExitCode = &now, outcome, exit
		if err != nil {
			s.Error = err.Error()
		}
		for i := range s.Phases { // phases cut short by the end
			if s.Phases[i].FinishedAt == nil {
				s.Phases[i].FinishedAt, s.Phases[i].Outcome = &now, jobdir.PhaseFailed
				if s.Phases[i].Error == "" {
					s.Phases[i].Error = "interrupted: " + outcome
				}
			}
		}
	})
}
