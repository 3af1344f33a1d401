package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
)

// quarantinedRE matches the names quarantine gives what it moves aside, and the only names
// prune removes there: <key>.<UTC time>.tar, .tar.sha256 and .json.
var quarantinedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{64}\.[0-9]{8}T[0-9]{6}\.(tar|tar\.sha256|json)$`)
})

// geteuid is os.Geteuid (tests stand for another user).
var geteuid = os.Geteuid

// QuarantineError is a quarantine folder that cannot be used: a link, a file, or a folder
// of another user (for prune).
type QuarantineError struct {
	Path string
	Why  string
}

func (e *QuarantineError) Error() string { return e.Path + " " + e.Why }

// openQuarantine opens the quarantine folder of the cache open as root (creating it when
// create and missing). It must be a folder, not a link to one: links are not followed, and
// the folder opened is checked to be the one looked at, so a swap in between is seen.
func (c *Cache) openQuarantine(root *os.Root, create bool) (*os.Root, fs.FileInfo, error) {
	p := c.quarantinePath()
	st, err := root.Lstat(quarantineDir)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = root.Mkdir(quarantineDir, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			st, err = root.Lstat(quarantineDir)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		return nil, nil, &QuarantineError{Path: p, Why: "is " + safefile.Describe(st.Mode()) + ", not a folder; benchctl never follows it: remove it, and benchctl makes the folder anew"}
	}
	q, err := root.OpenRoot(quarantineDir)
	if err != nil {
		return nil, nil, err
	}
	qs, err := q.Stat(".")
	if err != nil || !os.SameFile(st, qs) {
		q.Close()
		return nil, nil, &QuarantineError{Path: p, Why: "changed while it was opened (was it replaced by a link?); run again"}
	}
	return q, qs, nil
}

// quarantine moves a corrupt entry aside (never deleted silently: it is evidence), into a
// quarantine folder that is not a link; every rename is inside the cache folder (os.Root).
func (c *Cache) quarantine(key string, f *os.File, sum checksum, got string) error {
	stamp := time.Now().UTC().Format("20060102T150405")
	name := key + "." + stamp
	moved := []string{tarName(name), sumName(name), metaName(name)}
	dest := filepath.Join(c.quarantinePath(), moved[0])
	root, err := os.OpenRoot(c.Dir)
	if err != nil {
		return &CorruptError{Key: key, Algo: sum.Algo, Want: sum.Want, Got: got, NotMoved: err.Error()}
	}
	defer root.Close()
	q, _, err := c.openQuarantine(root, true)
	if err != nil { // the entry stays; loads keep refusing it until someone clears the way
		return &CorruptError{Key: key, Algo: sum.Algo, Want: sum.Want, Got: got, NotMoved: err.Error()}
	}
	defer q.Close()
	into := func(n string) string { return quarantineDir + "/" + n }
	notMoved := ""
	if err := root.Rename(tarName(key), into(moved[0])); err != nil {
		if errors.Is(err, os.ErrNotExist) && f != nil {
			return &ReplacedError{Key: key} // republished (or moved aside by another node) meanwhile
		}
		notMoved = err.Error()
	} else if f != nil {
		// The tar is moved first; if it is not the one that was read, a republish put it
		// there after the check: it goes back, and the entry is left alone.
		a, err1 := f.Stat()
		b, err2 := q.Lstat(moved[0])
		if err1 == nil && err2 == nil && !os.SameFile(a, b) {
			if root.Rename(into(moved[0]), tarName(key)) == nil {
				return &ReplacedError{Key: key}
			}
		}
	}
	_ = root.Rename(sumName(key), into(moved[1]))
	_ = root.Rename(metaName(key), into(moved[2]))
	now := time.Now() // prune --older-than counts from when it was moved aside
	for _, n := range moved {
		if st, err := q.Lstat(n); err == nil && st.Mode().IsRegular() {
			_ = q.Chtimes(n, now, now)
		}
	}
	if notMoved != "" {
		return &CorruptError{Key: key, Algo: sum.Algo, Want: sum.Want, Got: got, NotMoved: notMoved}
	}
	return &CorruptError{Key: key, Algo: sum.Algo, Want: sum.Want, Got: got, MovedTo: dest}
}

// quarantineIncomplete moves an incomplete entry's files aside, like a corrupt one's.
func (c *Cache) quarantineIncomplete(key string, inc *IncompleteError) error {
	err := c.quarantine(key, nil, checksum{}, "")
	var ce *CorruptError
	if errors.As(err, &ce) {
		if ce.MovedTo == "" {
			return fmt.Errorf("%v; it could not be moved aside: %s", inc, ce.NotMoved)
		}
		return fmt.Errorf("%v; moved aside to %s", inc, ce.MovedTo)
	}
	return err
}

// pruneQuarantine removes what quarantine moved aside (older than o.OlderThan, when set):
// only from a quarantine folder that is a folder (not a link) of the user running prune or
// of root, only names that quarantine gives, each removed relative to the folder opened
// (a link is removed itself, never followed). What it leaves is said in res.Skipped.
func (c *Cache) pruneQuarantine(root *os.Root, o PruneOptions, res *PruneResult) {
	qpath := c.quarantinePath()
	q, qs, err := c.openQuarantine(root, false)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		res.Skipped = append(res.Skipped, Skipped{Path: qpath, Reason: strings.TrimPrefix(err.Error(), qpath+" ")})
		return
	}
	defer q.Close()
	if uid, ok := safefile.Owner(qs); ok && uid != geteuid() && uid != 0 {
		res.Skipped = append(res.Skipped, Skipped{Path: qpath, Reason: fmt.Sprintf(
			"owned by uid %d, not by you (uid %d) or root: only its owner or root prunes it", uid, geteuid())})
		return
	}
	d, err := q.Open(".")
	if err != nil {
		res.Skipped = append(res.Skipped, Skipped{Path: qpath, Reason: err.Error()})
		return
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		res.Skipped = append(res.Skipped, Skipped{Path: qpath, Reason: err.Error()})
	}
	for _, e := range ents {
		p := filepath.Join(qpath, e.Name())
		if !quarantinedRE().MatchString(e.Name()) {
			res.Skipped = append(res.Skipped, Skipped{Path: p, Reason: "not named like an entry moved aside (<key>.<time>.tar, .tar.sha256 or .json): left for whoever put it there"})
			continue
		}
		info, err := q.Lstat(e.Name())
		if err != nil {
			continue // gone meanwhile
		}
		if info.IsDir() {
			res.Skipped = append(res.Skipped, Skipped{Path: p, Reason: "a folder, where quarantine moves only files"})
			continue
		}
		if o.OlderThan > 0 && o.Now.Sub(info.ModTime()) < o.OlderThan {
			continue
		}
		r := Pruned{Path: p, Reason: "corrupt entry moved aside"}
		if info.Mode().IsRegular() {
			r.Size = info.Size()
		} else {
			r.Reason += " (" + safefile.Describe(info.Mode()) + ": removed itself, never followed or opened)"
		}
		if !o.DryRun {
			if err := q.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				res.Skipped = append(res.Skipped, Skipped{Path: p, Reason: "could not remove: " + err.Error()})
				continue
			}
		}
		res.Removed = append(res.Removed, r)
	}
}
