package jobsecret

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// Env reads $BENCHCTL_JOB_SECRET: set is false when it is unset; blanks around it
// do not count, and a blank or short one is an error (not a silent fallback).
func Env(lookup func(string) (string, bool)) (v string, set bool, err error) {
	raw, ok := lookup("BENCHCTL_JOB_SECRET")
	if !ok {
		return "", false, nil
	}
	v = strings.TrimSpace(raw)
	switch {
	case v == "":
		return "", false, &scheduler.ContextError{Var: "BENCHCTL_JOB_SECRET", Msg: "is set but blank: unset it, or set at least 16 characters"}
	case len(v) < 16:
		return "", false, &scheduler.ContextError{Var: "BENCHCTL_JOB_SECRET", Msg: "is shorter than 16 characters (blanks around it do not count)"}
	}
	return v, true, nil
}

// secretFileVar names the file that holds the job's secret: benchctl submit's script sets
// it to the submission's <token>.secret, which only its owner may read.
const secretFileVar = "BENCHCTL_JOB_SECRET_FILE"

// fileSecret reads $BENCHCTL_JOB_SECRET_FILE: set is false when it is unset. The file must
// pass readSecret's checks (a regular file of this user, 0600, not a link): a secret
// someone else could have planted or read is refused.
func fileSecret(lookup func(string) (string, bool)) (s []byte, set bool, err error) {
	raw, ok := lookup(secretFileVar)
	if !ok {
		return nil, false, nil
	}
	p := strings.TrimSpace(raw)
	if p == "" {
		return nil, false, &scheduler.ContextError{Var: secretFileVar, Msg: "is set but blank: unset it, or name the job's secret file"}
	}
	s, err = readSecretWith(p, "the secret must be a file of the user running the job, readable by nobody else: submit the job again with benchctl submit")
	var bad *secretFileError
	if errors.As(err, &bad) {
		return nil, false, fmt.Errorf("%s: %w", secretFileVar, err)
	}
	if err != nil {
		return nil, false, &scheduler.ContextError{Var: secretFileVar, Msg: err.Error()}
	}
	return s, true, nil
}

// Of returns the barrier secret: $BENCHCTL_JOB_SECRET; else the file
// $BENCHCTL_JOB_SECRET_FILE names (benchctl submit); else the job folder's secret
// file (rank 0 creates it, workers wait for it), read and written through the folder held
// open, so that a folder swapped for a link after it was checked neither receives nor
// supplies the secret; else, only without a job folder (job is
// nil), a secret derived from public values — with a loud warning, since anyone who can
// compute it can talk to the barrier.
func Of(ctx context.Context, lookup func(string) (string, bool), job *jobdir.Folder, n scheduler.Node, warn func(string)) ([]byte, error) {
	if v, set, err := Env(lookup); err != nil {
		return nil, err
	} else if set {
		return []byte(v), nil
	}
	if s, set, err := fileSecret(lookup); err != nil {
		return nil, err
	} else if set {
		return s, nil
	}
	if job == nil {
		warn("no BENCHCTL_JOB_SECRET and no shared directory: the barrier secret is derived from the job id and node list, which anyone on the network can compute. Set BENCHCTL_JOB_SECRET (benchctl submit does) or use a shared directory.")
		h := sha256.Sum256([]byte("benchctl-public-secret/" + n.JobID + "/" + strings.Join(n.Hosts, ",")))
		return h[:], nil
	}
	p := job.Secret()
	if n.Rank == 0 {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		s := hex.EncodeToString(b)
		// Created exclusively (O_EXCL: not even through a link planted under the name); a
		// worker that reads it half-written finds it incomplete and reads again.
		if err := job.CreateFile(jobdir.SecretFile, []byte(s), 0o600); errors.Is(err, fs.ErrExist) {
			return readFolderSecret(job, p) // a restarted rank 0 of the same attempt
		} else if err != nil {
			return nil, fmt.Errorf("creating the job secret: %w", err)
		}
		return []byte(s), nil
	}
	for backoff := 20 * time.Millisecond; ; backoff = min(backoff*2, time.Second) {
		s, err := readFolderSecret(job, p)
		if err == nil {
			return s, nil
		}
		var bad *secretFileError
		if errors.As(err, &bad) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rank 0 did not create the job secret %s in time (is the shared directory the same on every node?)", p)
		case <-time.After(backoff):
		}
	}
}

// readFolderSecret reads the job folder's secret file p through the open folder, with
// readSecret's checks.
func readFolderSecret(job *jobdir.Folder, p string) ([]byte, error) {
	f, err := job.OpenFile(jobdir.SecretFile)
	var nr *safefile.NotRegularError
	if errors.As(err, &nr) {
		return nil, &secretFileError{path: p, what: nr.What + ", not a regular file"}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSecretFile(f, p, "")
}

// readSecretWith reads a secret file. It must be a regular file (not a link, not a FIFO),
// this user's, and readable by nobody else: anyone who could read it could talk to the job
// channel, and anyone who could replace it could make the job trust them. A file that
// fails these checks is a *secretFileError (the caller stops: waiting will not fix it),
// whose hint is fix ("" for the job folder's secret).
func readSecretWith(p, fix string) ([]byte, error) {
	f, err := safefile.OpenNoFollow(p)
	var nr *safefile.NotRegularError
	if errors.As(err, &nr) {
		return nil, &secretFileError{path: p, what: nr.What + ", not a regular file", fix: fix}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSecretFile(f, p, fix)
}

// readSecretFile reads the open secret file f (at p) after checkSecretFile's checks.
func readSecretFile(f *os.File, p, fix string) ([]byte, error) {
	if err := checkSecretFile(f, p); err != nil {
		var bad *secretFileError
		if errors.As(err, &bad) && fix != "" {
			bad.fix = fix
		}
		return nil, err
	}
	var buf [4 << 10]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if s := strings.TrimSpace(string(buf[:n])); len(s) >= 32 {
		return []byte(s), nil
	}
	return nil, errors.New("secret file is incomplete")
}

// secretFileError is a job secret file that cannot be trusted.
type secretFileError struct{ path, what, fix string }

func (e *secretFileError) Error() string {
	fix := e.fix
	if fix == "" {
		fix = "the job folder must be private to the user running the job: remove the file (rank 0 creates a new one) and check who else can write to the shared directory"
	}
	return fmt.Sprintf("the job secret %s is %s; %s", e.path, e.what, fix)
}

// InvalidInput: the job folder is the user's to fix (exit 4).
func (e *secretFileError) InvalidInput() bool { return true }
