package results

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"

	"github.com/gofrs/flock"
)

// maxAppendSize bounds the user's perf.csv that AppendCSV rewrites.
const maxAppendSize = 4 * MaxCSVSize

// AppendCSV appends t's rows to the CSV file at path (created if missing) safely when
// several collects do it at once: it holds a lock file beside it (path + ".lock", flock, or an
// O_EXCL lock file where flock is unsupported), makes the header the union of both
// (the file's columns first, then t's new ones; missing values are empty), and rewrites the
// file atomically. A file that is not a CSV is an error and is left untouched.
func AppendCSV(ctx context.Context, path string, t *Table) error {
	unlock, err := lockPath(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	var old *Table
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("appending to %s: %w", path, err)
	default:
		data, err := io.ReadAll(io.LimitReader(f, maxAppendSize+1))
		f.Close()
		if err != nil {
			return fmt.Errorf("appending to %s: %w", path, err)
		}
		if len(data) > maxAppendSize {
			return fmt.Errorf("appending to %s: the file is larger than %d MiB; start a new one", path, maxAppendSize>>20)
		}
		if len(data) > 0 {
			if old, err = parseCSV(path, data, false); err != nil {
				return fmt.Errorf("appending to %s: not a CSV this can extend: %w", path, err)
			}
		}
	}
	merged := unionTables(old, t)
	data, err := EncodeCSV(merged)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data)
}

// unionTables puts a's rows then b's under the union of their headers.
func unionTables(a, b *Table) *Table {
	if a == nil {
		return b
	}
	out := &Table{Header: append([]string{}, a.Header...)}
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
// minutes). Where flock is unsupported (NFS mounted nolock) it falls back to an O_EXCL
// lock file, taken over when older than 2 minutes (its holder died).
func lockPath(ctx context.Context, path string) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fl := flock.New(path)
	ok, err := fl.TryLockContext(ctx, 50*time.Millisecond)
	if err == nil && ok {
		return func() { _ = fl.Unlock() }, nil
	}
	if err != nil && !errors.Is(err, syscall.ENOLCK) && !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOSYS) {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	excl := path + ".excl"
	for {
		f, err := os.OpenFile(excl, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { _ = os.Remove(excl) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("locking %s: %w", excl, err)
		}
		if st, err := os.Stat(excl); err == nil && time.Since(st.ModTime()) > 2*time.Minute {
			_ = os.Remove(excl)
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("locking %s: %w", excl, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
