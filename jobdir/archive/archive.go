// Package archive moves a job's folders (every attempt's, jobs/<id> and jobs/<id>.<n>) as
// one tar stream: Write on the machine that has the results volume (a collector pod), Read
// on one that does not (`benchctl collect` with API access alone), which takes the stream
// as hostile: folders and regular files only, names inside the job's folders, bounded in
// size and count, extracted aside and moved into place only when complete.
package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/jobdir"
)

// ErrNoJob is Write's error for a job that has no folder.
var ErrNoJob = errors.New("no such job")

// Limits bound what Read takes.
type Limits struct {
	Bytes   int64 // the files' contents, in all (0: DefaultBytes)
	Entries int   // folders and files (0: DefaultEntries)
}

// The default limits: a job of a thousand nodes with their logs and telemetry fits.
const (
	DefaultBytes   = 64 << 30
	DefaultEntries = 1_000_000
)

// Folders are the names under jobs/ of a job's attempts that l has, in attempt order.
func Folders(l jobdir.Layout, id string) ([]string, error) {
	ents, err := os.ReadDir(l.Jobs())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if got, _ := jobdir.SplitName(e.Name()); got == id && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		_, a := jobdir.SplitName(out[i])
		_, b := jobdir.SplitName(out[j])
		return a < b
	})
	return out, nil
}

// Write writes the folders of job id's attempts as a tar stream (names relative to
// jobs/), folders and regular files only: a link or a FIFO in a job folder is not
// followed, and counted in skipped.
func Write(w io.Writer, l jobdir.Layout, id string) (files int, skipped int, err error) {
	names, err := Folders(l, id)
	if err != nil {
		return 0, 0, err
	}
	if len(names) == 0 {
		return 0, 0, fmt.Errorf("%w: no folder of job %s in %s", ErrNoJob, id, l.Jobs())
	}
	tw := tar.NewWriter(w)
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(l.Jobs(), name), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(l.Jobs(), p)
			rel = filepath.ToSlash(rel)
			switch {
			case d.IsDir():
				return tw.WriteHeader(&tar.Header{Name: rel + "/", Typeflag: tar.TypeDir, Mode: 0o755})
			case d.Type().IsRegular():
				if err := writeFile(tw, p, rel); err != nil {
					return err
				}
				files++
			default:
				skipped++
			}
			return nil
		})
		if err != nil {
			return files, skipped, err
		}
	}
	return files, skipped, tw.Close()
}

// writeFile writes one file as it is when opened (a file that grows is cut at that size).
func writeFile(tw *tar.Writer, p, rel string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: st.Size(), ModTime: st.ModTime()}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(f, st.Size()))
	if err == nil && n < st.Size() { // it shrank: zeros keep the stream whole
		_, err = io.CopyN(tw, zeros{}, st.Size()-n)
	}
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Read extracts a stream Write made of job id into l's jobs/ folder: beside it first, then
// each attempt's folder moved into place; an attempt folder l already has is an error, and
// nothing is moved. What a stream may hold is checked entry by entry (Limits, names that
// stay inside the job's folders, folders and regular files only).
func Read(r io.Reader, l jobdir.Layout, id string, lim Limits) (files int, err error) {
	if lim.Bytes <= 0 {
		lim.Bytes = DefaultBytes
	}
	if lim.Entries <= 0 {
		lim.Entries = DefaultEntries
	}
	if err := os.MkdirAll(l.Jobs(), 0o755); err != nil {
		return 0, err
	}
	stage, err := os.MkdirTemp(l.Jobs(), ".fetch-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(stage)
	tr := tar.NewReader(r)
	var total int64
	tops := map[string]bool{}
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return files, fmt.Errorf("the job folder's stream: %w", err)
		}
		if entries >= lim.Entries {
			return files, fmt.Errorf("the job folder's stream has more than %d entries", lim.Entries)
		}
		name := strings.TrimSuffix(h.Name, "/")
		top, _, _ := strings.Cut(name, "/")
		if got, _ := jobdir.SplitName(top); got != id || name == "" || path.Clean(name) != name || path.IsAbs(name) || strings.HasPrefix(name, "..") || strings.ContainsRune(name, '\\') {
			return files, fmt.Errorf("the job folder's stream holds %q, outside job %s's folders", clip(h.Name), id)
		}
		dst := filepath.Join(stage, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return files, err
			}
		case tar.TypeReg:
			if h.Size < 0 || total+h.Size > lim.Bytes {
				return files, fmt.Errorf("the job folder's stream is larger than %d bytes", lim.Bytes)
			}
			total += h.Size
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return files, err
			}
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
			if err != nil {
				return files, fmt.Errorf("the job folder's stream: %w", err)
			}
			_, err = io.CopyN(f, tr, h.Size)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return files, fmt.Errorf("the job folder's stream, at %s: %w", clip(name), err)
			}
			files++
		default:
			return files, fmt.Errorf("the job folder's stream holds %q, which is neither a folder nor a regular file", clip(h.Name))
		}
		tops[top] = true
	}
	if len(tops) == 0 {
		return 0, fmt.Errorf("the job folder's stream holds no folder of job %s", id)
	}
	for top := range tops {
		if _, err := os.Lstat(filepath.Join(l.Jobs(), top)); err == nil {
			return files, fmt.Errorf("%s is here already: not replaced", filepath.Join(l.Jobs(), top))
		}
	}
	for top := range tops {
		if err := os.Rename(filepath.Join(stage, top), filepath.Join(l.Jobs(), top)); err != nil {
			return files, err
		}
	}
	return files, nil
}

func clip(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}
