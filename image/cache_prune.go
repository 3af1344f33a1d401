package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
)

// PruneOptions select what Prune removes.
type PruneOptions struct {
	// Limit says whether complete entries are pruned at all; without it only leftovers
	// (unfinished writes, unheld locks, incomplete and corrupt entries) are.
	Limit     bool
	OlderThan time.Duration // entries created longer ago than this (0: any age)
	Keep      int           // always keep the newest Keep entries (0: none)
	DryRun    bool
	Now       time.Time
}

// PruneResult is what Prune removed (or, with DryRun, would remove), and what it left
// although it looked like something to remove, with why.
type PruneResult struct {
	Removed []Pruned
	Skipped []Skipped
}

// Skipped is a path Prune left alone, and why.
type Skipped struct {
	Path   string
	Reason string
}

// Pruned is one thing Prune removed (or would remove).
type Pruned struct {
	Path   string
	Key    string
	Size   int64
	Reason string
}

// Names of builders' leftovers in the cache folder: temp files of a publish (the tar, and
// the checksum and metadata written through atomicfile) and build lock files.
var (
	tempRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\.[0-9a-f]{64}\.(tar|tar\.sha256|json)\.tmp-[0-9A-Za-z]+$`)
	})
	lockRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\.[0-9a-f]{64}\.lock(\.excl)?$`) })
)

// Prune removes old entries, leftovers of builders (temp files of killed ones, and build
// lock files nobody holds, older than an hour) and moved-aside corrupt entries older than
// OlderThan. Every removal is of a name benchctl writes, relative to the folder it was
// found in: a link is removed itself, never followed, and a FIFO is never opened.
// Quarantined entries are removed only from a quarantine folder of the user running it
// (or of root); what Prune leaves there, and why, is in the result's Skipped.
func (c *Cache) Prune(o PruneOptions) (PruneResult, error) {
	var res PruneResult
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	entries, err := c.List()
	if err != nil {
		return res, err
	}
	kept := 0
	for _, e := range entries { // newest first
		if e.ImageID == "" {
			// Incomplete (no metadata or checksum): never usable, always removed.
			res.Removed = append(res.Removed, Pruned{Path: e.Tar, Key: e.Key, Reason: "incomplete entry (no valid metadata or checksum, or a file of it not a regular file)"})
			if !o.DryRun {
				if err := c.Remove(e.Key); err != nil {
					return res, err
				}
			}
			continue
		}
		if !o.Limit {
			continue // no limit given: complete entries stay
		}
		if kept++; kept <= o.Keep {
			continue
		}
		if o.OlderThan > 0 && o.Now.Sub(e.Created) < o.OlderThan {
			continue
		}
		res.Removed = append(res.Removed, Pruned{Path: e.Tar, Key: e.Key, Size: e.Size, Reason: fmt.Sprintf("created %s", e.Created.Format(time.RFC3339))})
		if !o.DryRun {
			if err := c.Remove(e.Key); err != nil {
				return res, err
			}
		}
	}
	root, err := os.OpenRoot(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil // nothing was ever published here
	}
	if err != nil {
		return res, err
	}
	defer root.Close()
	c.pruneLeftovers(root, o, &res)
	c.pruneQuarantine(root, o, &res)
	return res, nil
}

// pruneLeftovers removes builders' temp files and unheld lock files an hour old or more.
func (c *Cache) pruneLeftovers(root *os.Root, o PruneOptions, res *PruneResult) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	junk, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range junk {
		name := e.Name()
		temp, lock := tempRE().MatchString(name), lockRE().MatchString(name)
		if !temp && !lock {
			continue
		}
		info, err := root.Lstat(name)
		if err != nil || info.IsDir() || o.Now.Sub(info.ModTime()) < time.Hour {
			continue
		}
		p := filepath.Join(c.Dir, name)
		r := Pruned{Path: p, Size: info.Size(), Reason: "unfinished write (a builder was killed)"}
		switch {
		case !info.Mode().IsRegular():
			// Not what a builder writes: removed itself, never opened or followed.
			r.Size, r.Reason = 0, safefile.Describe(info.Mode())+" where benchctl writes only files: removed itself, never followed or opened"
		case lock:
			if pruneLockFile(p, o.DryRun) {
				res.Removed = append(res.Removed, Pruned{Path: p, Reason: "build lock nobody holds"})
			}
			continue
		}
		if !o.DryRun {
			if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				res.Skipped = append(res.Skipped, Skipped{Path: p, Reason: "could not remove: " + err.Error()})
				continue
			}
		}
		res.Removed = append(res.Removed, r)
	}
}
