package collect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/filelock"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/results"
)

// AppendCSV appends t's rows to the CSV file at path (created if missing) safely when
// several collects do it at once: it holds a lock file beside it (path + ".lock", flock, or an
// O_EXCL lock file where flock is unsupported), makes the header the union of both
// (the file's columns first, then t's new ones; missing values are empty), and rewrites the
// file atomically. A file that is not a CSV is an error and is left untouched.
func AppendCSV(ctx context.Context, path string, t *results.Table) error {
	unlock, err := lockPath(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	old, err := readAppendTarget(path)
	if err != nil {
		return err
	}
	merged := unionTables(old, t)
	data, err := results.EncodeCSV(merged)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}

// CheckAppendTarget says whether AppendCSV could extend path, before any work is done: a
// missing file in an existing folder is fine; a folder, a file that is not a CSV or is too
// large, or a missing parent folder is an *InputError (exit 4).
func CheckAppendTarget(path string) error {
	_, err := readAppendTarget(path)
	return err
}

// readAppendTarget reads the CSV to append to; nil when it does not exist yet.
func readAppendTarget(path string) (*results.Table, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if pst, perr := os.Stat(filepath.Dir(path)); perr != nil || !pst.IsDir() {
			return nil, &results.InputError{Path: path, Err: fmt.Errorf("the folder %s does not exist; create it first or append elsewhere", filepath.Dir(path))}
		}
		return nil, nil
	case err != nil:
		return nil, &results.InputError{Path: path, Err: err}
	case !st.Mode().IsRegular():
		return nil, &results.InputError{Path: path, Err: fmt.Errorf("is not a regular file; give the path of a CSV file to append to")}
	case st.Size() > results.MaxAppendSize:
		return nil, &results.InputError{Path: path, Err: fmt.Errorf("the file is larger than %d MiB; start a new one", results.MaxAppendSize>>20)}
	}
	data, err := safefile.ReadFile(path, results.MaxAppendSize) // a FIFO swapped in since the stat is refused
	if err != nil {
		return nil, &results.InputError{Path: path, Err: err}
	}
	if len(data) == 0 {
		return nil, nil
	}
	old, err := results.ParseTable(path, data)
	if err != nil {
		return nil, &results.InputError{Path: path, Err: fmt.Errorf("not a CSV this can extend (%v); append to a perf.csv, or give a new file", results.TrimPathPrefix(err, path))}
	}
	return old, nil
}

// unionTables puts a's rows then b's under the union of their headers.
func unionTables(a, b *results.Table) *results.Table {
	if a == nil {
		return b
	}
	out := &results.Table{Header: append([]string{}, a.Header...)}
	pos := make(map[string]int, len(a.Header)+len(b.Header))
	for i, h := range a.Header {
		pos[h] = i
	}
	bmap := make([]int, len(b.Header))
	for i, h := range b.Header {
		p, ok := pos[h]
		if !ok {
			p = len(out.Header)
			out.Header = append(out.Header, h)
			pos[h] = p
		}
		bmap[i] = p
	}
	for _, r := range a.Rows {
		row := make([]string, len(out.Header))
		copy(row, r)
		out.Rows = append(out.Rows, row)
	}
	for _, r := range b.Rows {
		row := make([]string, len(out.Header))
		for i, v := range r {
			row[bmap[i]] = v
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// lockPath takes an exclusive lock on a lock file, waiting until ctx ends (at most 2
// minutes): internal/filelock, so flock, or a lock file where flock is missing or local to
// this machine (NFS mounted nolock).
func lockPath(ctx context.Context, path string) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	l, err := filelock.Acquire(ctx, path, filelock.Options{Poll: 50 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Unlock() }, nil
}
