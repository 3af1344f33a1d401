package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Outcomes of a node, a phase or a benchmark (status.json).
const (
	OutcomeRunning   = "running"
	OutcomeSuccess   = "success"
	OutcomeFailure   = "failure"
	OutcomeTimeout   = "timeout"
	OutcomeCancelled = "cancelled"
	OutcomeSkipped   = "skipped"
	PhaseOK          = "ok"
	PhaseFailed      = "failed"
)

// Status is a node's status.json: written at the start, at every phase change and at the
// end, whatever the end is. The results package reads the same schema.
type Status struct {
	Version    int               `json:"version"`
	Job        string            `json:"job"`
	Attempt    int               `json:"attempt"`
	Rank       int               `json:"rank"`
	Host       string            `json:"host"`
	World      int               `json:"world"`
	Outcome    string            `json:"outcome"`
	ExitCode   int               `json:"exitCode"`
	Error      string            `json:"error"`
	ImageID    string            `json:"imageId"`
	ImageKey   string            `json:"imageKey"`
	StartedAt  time.Time         `json:"startedAt"`
	FinishedAt *time.Time        `json:"finishedAt,omitempty"`
	Phases     []PhaseStatus     `json:"phases"`
	Benchmarks []BenchmarkStatus `json:"benchmarks"`
}

// PhaseStatus is one phase: context, barrier, image, run, results.
type PhaseStatus struct {
	Name       string     `json:"name"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	Outcome    string     `json:"outcome"`
	Error      string     `json:"error"`
}

// BenchmarkStatus is one benchmark's run on this node.
type BenchmarkStatus struct {
	Name            string     `json:"name"`
	Outcome         string     `json:"outcome"`
	ExitCode        int        `json:"exitCode"`
	Error           string     `json:"error"`
	StartedAt       time.Time  `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt,omitempty"`
	DurationSeconds float64    `json:"durationSeconds"`
	Log             string     `json:"log"`
	Diagnostics     string     `json:"diagnostics,omitempty"`
}

// statusFile keeps a Status and rewrites the file on every change.
type statusFile struct {
	mu   sync.Mutex
	path string
	s    Status
}

func newStatusFile(path string, n Node) *statusFile {
	return &statusFile{path: path, s: Status{Version: 1, Job: n.JobID, Attempt: n.Attempt, Rank: n.Rank, Host: n.Host,
		World: n.World, Outcome: OutcomeRunning, StartedAt: time.Now().UTC(), Phases: []PhaseStatus{}, Benchmarks: []BenchmarkStatus{}}}
}

func (f *statusFile) update(fn func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
	f.writeLocked()
}

func (f *statusFile) writeLocked() {
	if f.path == "" {
		return
	}
	data, err := json.MarshalIndent(f.s, "", "  ")
	if err != nil {
		return
	}
	_ = writeFileAtomic(f.path, append(data, '\n'))
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
	f.update(func(s *Status) {
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

// writeFileAtomic writes through a temp file in the same folder: fsync, rename.
func writeFileAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
