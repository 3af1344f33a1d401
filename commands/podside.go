package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/archive"
	"github.com/benchctl/benchctl/runner/remote"
)

// What a Kubernetes job's pods run besides `benchctl run` (hidden commands).

// SelfCopy copies this benchctl and its agent into dir (the init container of a pod: an
// emptyDir the benchmark's container mounts), so that the benchctl image needs nothing else.
func SelfCopy(_ context.Context, _ iostreams.Streams, dir *string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	agent, err := remote.AgentBinary()
	if err != nil {
		return err
	}
	for _, c := range []struct{ from, to string }{{self, "benchctl"}, {agent, remote.AgentName}} {
		in, err := os.Open(c.from)
		if err != nil {
			return err
		}
		err = safefile.CopyNew(in, filepath.Join(*dir, c.to), 0o755, 1<<30)
		in.Close()
		if err != nil {
			return fmt.Errorf("copying %s into %s: %w", c.from, *dir, err)
		}
	}
	return nil
}

// JobArchiveOptions are job-archive's job and shared directory.
type JobArchiveOptions struct {
	Job       string
	SharedDir string
}

// JobArchive writes a job's folders (every attempt's) to stdout as a tar stream: what a
// collector pod runs for `benchctl collect` on a machine without the results volume.
func JobArchive(_ context.Context, io iostreams.Streams, opts *JobArchiveOptions) error {
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(io.Out(), 1<<20)
	files, skipped, err := archive.Write(w, jobdir.Layout{Shared: dir}, opts.Job)
	if errors.Is(err, archive.ErrNoJob) {
		return exitcode.Usagef("give a job of that shared directory (benchctl jobs lists them)", "%v", err)
	}
	if err != nil {
		return err
	}
	if skipped > 0 {
		slog.Warn("not links, FIFOs or devices: left out", "count", skipped)
	}
	slog.Debug("archived", "job", opts.Job, "files", files)
	return w.Flush()
}
