// Package scripttree checks and copies a MAD model's script folder into its run directory,
// as madengine's `cp -vLR --preserve=all <dir>/. <run_directory>/` does, with bounds and
// without trusting what the folder holds: links are followed only while they stay inside
// the checkout (a link out of it is an error), FIFOs, sockets and devices are errors (a
// FIFO would block the copy forever), and a folder over Limits is an error that names the
// bound. Check walks without writing; Copy writes what Check accepts.
package scripttree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/internal/safefile"
)

// Limits bound a script folder. A MAD script folder is a few files of a few KiB.
type Limits struct {
	Entries int   // files and folders, links counted as what they lead to
	Bytes   int64 // the regular files' sizes added up
}

// DefaultLimits are the bounds the issue of MAD's run directories fixes: 100,000 entries,
// 1 GiB.
var DefaultLimits = Limits{Entries: 100_000, Bytes: 1 << 30}

// Error is a script folder benchctl will not copy: Path is the entry at fault, Msg why.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string { return clip(e.Path) + ": " + e.Msg }

// clip shortens a path of hostile length for a message, keeping its start and its end.
func clip(p string) string {
	const head, tail = 60, 140
	if len(p) <= head+tail+3 {
		return p
	}
	return strings.ToValidUTF8(p[:head], "") + "…" + strings.ToValidUTF8(p[len(p)-tail:], "")
}

// InvalidInput marks the error as bad input (exit 4).
func (e *Error) InvalidInput() bool { return true }

// Check walks dir, a folder inside root (both absolute), as Copy would, without writing.
func Check(ctx context.Context, root, dir string, lim Limits) error {
	_, err := walk(ctx, root, dir, "", lim)
	return err
}

// Copy copies what dir holds into dst (created when missing; its mode is left as it is),
// following links that stay inside root, keeping each file's permission bits and times. It
// returns the number of bytes copied.
func Copy(ctx context.Context, root, dir, dst string, lim Limits) (int64, error) {
	return CopyExcept(ctx, root, dir, dst, lim)
}

// CopyExcept is Copy that leaves out the entries of dir's top folder named skip (a
// clone's .git).
func CopyExcept(ctx context.Context, root, dir, dst string, lim Limits, skip ...string) (int64, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	return walk(ctx, root, dir, dst, lim, skip...)
}

type walker struct {
	ctx     context.Context
	root    string // resolved
	dst     string // "" to check only
	lim     Limits
	entries int
	bytes   int64
	onPath  map[[2]uint64]bool // the folders being walked, against loops of links
	skip    []string           // names left out of the top folder
	depth   int
}

func walk(ctx context.Context, root, dir, dst string, lim Limits, skip ...string) (int64, error) {
	rroot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return 0, err
	}
	w := &walker{ctx: ctx, root: rroot, dst: dst, lim: lim, onPath: map[[2]uint64]bool{}, skip: skip}
	real, st, err := w.resolve(dir)
	if err != nil {
		return 0, err
	}
	if !st.IsDir() {
		return 0, &Error{Path: dir, Msg: "is " + safefile.Describe(st.Mode()) + ", not a folder"}
	}
	err = w.folder(dir, real, dst)
	return w.bytes, err
}

// resolve follows p to what it names, which must be inside the root.
func (w *walker) resolve(p string) (string, os.FileInfo, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || strings.Contains(err.Error(), "too many links") {
			return "", nil, &Error{Path: p, Msg: "is a loop of symbolic links"}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil, &Error{Path: p, Msg: "is a symbolic link to nothing (or does not exist)"}
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", nil, &Error{Path: p, Msg: "cannot be resolved: " + err.Error()}
	}
	if !inside(w.root, real) {
		return "", nil, &Error{Path: p, Msg: fmt.Sprintf("leads out of the checkout %s (to %s): a script folder may link only to files of the checkout", w.root, real)}
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	return real, st, nil
}

func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && filepath.IsLocal(rel) || rel == "."
}

func (w *walker) count(p string, size int64) error {
	w.entries++
	w.bytes += size
	switch {
	case w.entries > w.lim.Entries:
		return &Error{Path: p, Msg: fmt.Sprintf("the script folder holds more than %d files and folders (benchctl's bound for a run directory's copy; a MAD script folder holds a few): move data out of it, into data.json's data or a mount", w.lim.Entries)}
	case w.bytes > w.lim.Bytes:
		return &Error{Path: p, Msg: fmt.Sprintf("the script folder is larger than the %s bound of a run directory's copy (a MAD script folder is a few KiB): move data out of it, into data.json's data or a mount", safefile.SizeText(w.lim.Bytes))}
	}
	if w.entries%256 == 0 && w.ctx.Err() != nil {
		return context.Cause(w.ctx)
	}
	return nil
}

// folder walks the folder real (named shown in messages) into dst.
func (w *walker) folder(shown, real, dst string) error {
	d, err := os.Open(real)
	if err != nil {
		return err
	}
	st, err := d.Stat()
	if err != nil {
		d.Close()
		return err
	}
	if id := fileID(st); id != ([2]uint64{}) {
		if w.onPath[id] {
			d.Close()
			return &Error{Path: shown, Msg: "is a link to a folder that holds it (a loop)"}
		}
		w.onPath[id] = true
		defer delete(w.onPath, id)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	w.depth++
	defer func() { w.depth-- }()
	for _, name := range names {
		if w.depth == 1 && slices.Contains(w.skip, name) {
			continue
		}
		if err := w.entry(filepath.Join(shown, name), filepath.Join(real, name), dst, name); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) entry(shown, p, dstDir, name string) error {
	lst, err := os.Lstat(p)
	if err != nil {
		return err
	}
	real, st := p, lst
	if lst.Mode()&fs.ModeSymlink != 0 {
		if real, st, err = w.resolve(p); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Path = shown
			}
			return err
		}
	}
	to := ""
	if w.dst != "" {
		to = filepath.Join(dstDir, name)
	}
	switch {
	case st.IsDir():
		if err := w.count(shown, 0); err != nil {
			return err
		}
		if to != "" {
			if err := os.Mkdir(to, st.Mode().Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		if err := w.folder(shown, real, to); err != nil {
			return err
		}
		if to != "" {
			_ = os.Chtimes(to, st.ModTime(), st.ModTime())
		}
		return nil
	case st.Mode().IsRegular():
		if err := w.count(shown, st.Size()); err != nil {
			return err
		}
		if to == "" {
			return nil
		}
		return w.copyFile(shown, real, to, st)
	}
	return &Error{Path: shown, Msg: "is " + safefile.Describe(st.Mode()) + ": a script folder holds files and folders only (madengine's cp would hang on a FIFO or copy a device's bytes)"}
}

// copyFile copies one regular file, opened without blocking (a FIFO swapped in since the
// stat is refused), into a new file at to (never through a link there).
func (w *walker) copyFile(shown, from, to string, st os.FileInfo) error {
	in, err := safefile.Open(from)
	if err != nil {
		var nr *safefile.NotRegularError
		if errors.As(err, &nr) {
			return &Error{Path: shown, Msg: "is " + nr.What + ": a script folder holds files and folders only"}
		}
		return err
	}
	defer in.Close()
	_ = os.Remove(to)
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, st.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	// The copy stops at the size the walk counted: a file that grows meanwhile cannot pass the bound.
	if _, err := io.Copy(out, io.LimitReader(in, st.Size())); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", shown, err)
	}
	if err := out.Chmod(st.Mode().Perm()); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(to, st.ModTime(), st.ModTime())
}
