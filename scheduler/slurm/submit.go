package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/benchctl/benchctl/jobdir"
)

// Prepare creates the job's secret file (0600) and its script (0700) in
// <shared>/jobs/.submit/ (a private folder of this user, checked: see
// jobdir.Layout.WriteSubmission); it returns the script's path.
func Prepare(j *Job) (string, error) {
	l := jobdir.Layout{Shared: j.SharedDir}
	dir := l.Submit()
	if j.OutputDir == "" {
		j.OutputDir = dir
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b[:8])
	files := l.SubmitFiles(token)
	j.Token = token
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	j.SecretFile = files.Secret
	script, err := j.Script()
	if err != nil {
		return "", err
	}
	if _, err := l.WriteSubmission(token, []byte(hex.EncodeToString(secret)+"\n"), []byte(script)); err != nil {
		return "", fmt.Errorf("writing the job's secret and script: %w", err)
	}
	return files.Script, nil
}

// Submit runs sbatch --parsable with the job's options and returns the job id.
func Submit(ctx context.Context, run Commander, j Job, script string) (string, error) {
	out, err := run.Output(ctx, "sbatch", append(j.SbatchArgv(), script)...)
	if err != nil {
		if notFound(err) {
			return "", errors.New("sbatch was not found: run benchctl submit on a Slurm login node")
		}
		return "", fmt.Errorf("sbatch: %w", errText(err))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if !validJobID(id) {
		return "", fmt.Errorf("sbatch printed %q, not a job id", strings.TrimSpace(string(out)))
	}
	return id, nil
}

// Wait follows a job until Slurm no longer lists it as active, polling with backoff (0.5 s
// doubling to 15 s, back to 0.5 s when the state changes); tick is called on every poll
// with the state and any error asking Slurm (the caller shows progress from it).
func Wait(ctx context.Context, run Commander, id string, tick func(JobState, error)) (JobState, error) {
	delay := 500 * time.Millisecond
	last := ""
	for {
		st, err := QueryJobState(ctx, run, id)
		if err == nil && !st.Active() {
			return st, nil
		}
		if tick != nil {
			tick(st, err)
		}
		if st.State != last {
			last, delay = st.State, 500*time.Millisecond
		} else {
			delay = min(delay*2, 15*time.Second)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(delay):
		}
	}
}
