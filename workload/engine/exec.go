package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/workload"
)

// ExecAPI is the part of the Engine API that Exec calls. *client.Client satisfies it.
type ExecAPI interface {
	ExecCreate(ctx context.Context, containerID string, opts client.ExecCreateOptions) (client.ExecCreateResult, error)
	ExecAttach(ctx context.Context, execID string, opts client.ExecAttachOptions) (client.ExecAttachResult, error)
	ExecInspect(ctx context.Context, execID string, opts client.ExecInspectOptions) (client.ExecInspectResult, error)
}

var _ ExecAPI = (*client.Client)(nil)

// execSettle is how often Exec asks whether a command whose output has ended has ended.
const execSettle = 20 * time.Millisecond

// Exec runs c in the container (an exec of the Engine API, attached without a terminal,
// so stdout and stderr stay apart) and returns its exit code.
func (r Runtime) Exec(ctx context.Context, id string, c workload.Command) (int, error) {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return -1, errors.New("exec: no command to run")
	}
	api, ok := r.API.(ExecAPI)
	if !ok {
		return -1, errors.New("exec: this engine's client cannot run a command in a container")
	}
	created, err := api.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: c.Argv, Env: c.Env, WorkingDir: c.Workdir, User: c.User,
		AttachStdin: c.Stdin != nil, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	att, err := api.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id, err)
	}
	defer att.Close()
	stop := context.AfterFunc(ctx, att.Close) // ctx's end cuts the streams
	defer stop()
	if c.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, c.Stdin)
			if cw, ok := att.Conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite() // the command sees its stdin's end
			}
		}()
	}
	_, err = stdcopy.StdCopy(orDiscard(c.Stdout), orDiscard(c.Stderr), att.Reader)
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	if err != nil {
		return -1, fmt.Errorf("exec in %s: its output: %w", id, err)
	}
	// The output has ended with the command; the engine may say so a moment later.
	for {
		in, err := api.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
		if err != nil {
			return -1, fmt.Errorf("exec in %s: %w", id, err)
		}
		if !in.Running {
			return in.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(execSettle):
		}
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
