package runner

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// The status.json schema is jobdir's: the runner writes it, collect reads it back. The
// names are shortened here for the runner's many uses.
type (
	Status          = jobdir.Status
	PhaseStatus     = jobdir.PhaseStatus
	BenchmarkStatus = jobdir.BenchmarkStatus
)

// Outcomes of a node, a phase or a benchmark (status.json).
const (
	OutcomeRunning   = jobdir.OutcomeRunning
	OutcomeSuccess   = jobdir.OutcomeSuccess
	OutcomeFailure   = jobdir.OutcomeFailure
	OutcomeTimeout   = jobdir.OutcomeTimeout
	OutcomeCancelled = jobdir.OutcomeCancelled
	OutcomeSkipped   = jobdir.OutcomeSkipped
	OutcomeAborted   = jobdir.OutcomeAborted
	OutcomeLost      = jobdir.OutcomeLost
	PhaseOK          = jobdir.PhaseOK
	PhaseFailed      = jobdir.PhaseFailed
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
type statusFile struct {
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

func newStatusFile(node *jobdir.NodeFolder, n Node) *statusFile {
	return &statusFile{node: node, s: Status{Version: jobdir.StatusVersion, Job: n.JobID, Attempt: n.Attempt, Rank: n.Rank, Host: n.Host,
		World: n.World, Outcome: OutcomeRunning, StartedAt: time.Now().UTC(), Phases: []PhaseStatus{}, Benchmarks: []BenchmarkStatus{}}}
}

func (f *statusFile) update(fn func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
	f.progressLocked()
}

// updateNow is update written at once (with the progress that was waiting): a benchmark's
// start, which a node killed during the benchmark must have left (collect says which
// benchmark it was in).
func (f *statusFile) updateNow(fn func(*Status)) {
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
func (f *statusFile) progressLocked() {
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

// updateDurably is update whose write is synced to the disk: the node's end.
func (f *statusFile) updateDurably(fn func(*Status)) {
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

// endTrial moves the last record of the status, a trial run's that has ended, to the
// node's trial log and writes the status: a trial's record costs one line, and status.json
// keeps its size whatever the trials. A record the log could not take stays in the status
// (nothing is lost), and the error is returned.
func (f *statusFile) endTrial(fn func(*BenchmarkStatus)) error {
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

// addTrial records a trial run that did not run (skipped) straight in the trial log.
func (f *statusFile) addTrial(rec BenchmarkStatus) error {
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

func (f *statusFile) appendTrialLocked(rec BenchmarkStatus) error {
	if f.node == nil {
		return errors.New("no node folder")
	}
	_, err := f.node.AppendTrial(rec)
	return err
}

func (f *statusFile) writeLocked() {
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

// writeErr is the first error writing the file, if any.
func (f *statusFile) writeErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// phase starts a phase and returns the function that ends it.
func (f *statusFile) phase(name string) func(err error) {
	f.update(func(s *Status) {
		s.Phases = append(s.Phases, PhaseStatus{Name: name, StartedAt: time.Now().UTC(), Outcome: OutcomeRunning})
	})
	return func(err error) {
		f.update(func(s *Status) {
			for i := len(s.Phases) - 1; i >= 0; i-- {
				if s.Phases[i].Name == name && s.Phases[i].FinishedAt == nil {
					now := time.Now().UTC()
					s.Phases[i].FinishedAt = &now
					s.Phases[i].Outcome = PhaseOK
					if err != nil {
						s.Phases[i].Outcome, s.Phases[i].Error = PhaseFailed, err.Error()
					}
					return
				}
			}
		})
	}
}

// finish records the node's outcome; it is idempotent (the first call wins).
func (f *statusFile) finish(outcome string, exit int, err error) {
	f.updateDurably(func(s *Status) {
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
				s.Phases[i].FinishedAt, s.Phases[i].Outcome = &now, PhaseFailed
				if s.Phases[i].Error == "" {
					s.Phases[i].Error = "interrupted: " + outcome
				}
			}
		}
	})
}
