package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// CacheOptions are the cache subcommands' flags and arguments.
type CacheOptions struct {
	SharedDir string
	Output    string // -o of the subcommand that runs

	Keys  []string     // verify: the keys (or key prefixes) to check; none is every entry
	Key   string       // load: the key (or a prefix of one) to load
	Prune PruneOptions // prune's limits
}

// OpenCache opens the shared directory's image tar cache.
func OpenCache(opts *CacheOptions) (*image.Cache, error) {
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return nil, err
	}
	return image.CacheIn(dir) // ls, verify, prune and load create nothing
}

// CacheLs lists the cached images.
func CacheLs(ctx context.Context, io iostreams.Streams, opts *CacheOptions) error {
	c, err := OpenCache(opts)
	if err != nil {
		return err
	}
	entries, err := c.List()
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return writeJSON(io.Out(), entries)
	}
	tw := tabwriter.NewWriter(io.Out(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTAG\tSIZE\tBUILDER\tCREATED")
	for _, e := range entries {
		tag := "(incomplete metadata)"
		if len(e.Tags) > 0 {
			tag = e.Tags[0]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", image.ShortKey(e.Key), tag, humanBytes(e.Size), e.Builder, age(e.Created))
	}
	return tw.Flush()
}

func age(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

// cacheFailure is a verify that found damage: exit 1.
type cacheFailure struct{ n int }

func (e *cacheFailure) Error() string {
	return fmt.Sprintf("%d cache entries failed verification", e.n)
}

// verified is one entry that cache verify checked, as -o json prints it.
type verified struct {
	Key   string `json:"key"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// CacheVerify verifies the entry of the key prefix given (prefixes holds at most one),
// or every entry when none is given.
func CacheVerify(ctx context.Context, io iostreams.Streams, opts *CacheOptions) error {
	prefixes := opts.Keys
	c, err := OpenCache(opts)
	if err != nil {
		return err
	}
	var keys []string
	if len(prefixes) == 1 {
		k, err := c.Resolve(prefixes[0])
		if err != nil {
			return exitcode.Usagef("list keys with 'benchctl cache ls'", "%v", err)
		}
		keys = []string{k}
	} else {
		entries, err := c.List()
		if err != nil {
			return err
		}
		for _, e := range entries {
			keys = append(keys, e.Key)
		}
	}
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	bad := 0
	var checked []verified
	for _, k := range keys {
		v := verified{Key: k, OK: true}
		if _, err := c.VerifyContext(ctx, k, pp.Func()); err != nil {
			if errors.Is(err, context.Canceled) {
				return err // stopped: not a verdict on the entry
			}
			bad++
			v.OK, v.Error = false, err.Error()
		}
		checked = append(checked, v)
		if opts.Output == "json" {
			continue
		}
		if v.OK {
			fmt.Fprintf(io.Out(), "%s  ok\n", image.ShortKey(k))
		} else {
			fmt.Fprintf(io.Out(), "%s  FAILED  %s\n", image.ShortKey(k), v.Error)
		}
	}
	if opts.Output == "json" {
		if err := writeJSON(io.Out(), checked); err != nil {
			return err
		}
	}
	if bad > 0 {
		return &cacheFailure{n: bad}
	}
	return nil
}

// PruneOptions are cache prune's limits.
type PruneOptions struct {
	OlderThan time.Duration
	Keep      int
	DryRun    bool
	Limit     bool // --keep or --older-than was given (set in RunE): without, no entry is removed
}

// pruned is one file cache prune removed (or, with --dry-run, would remove), as -o json
// prints it.
type pruned struct {
	Path   string `json:"path"`
	Key    string `json:"key,omitempty"`
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
}

// CachePrune removes old cache entries and leftovers (--dry-run: lists them).
func CachePrune(ctx context.Context, io iostreams.Streams, opts *CacheOptions) error {
	p := &opts.Prune
	c, err := OpenCache(opts)
	if err != nil {
		return err
	}
	res, err := c.Prune(image.PruneOptions{Limit: p.Limit, OlderThan: p.OlderThan, Keep: p.Keep, DryRun: p.DryRun})
	verb := "removed"
	if p.DryRun {
		verb = "would remove"
	}
	var total int64
	rows := make([]pruned, 0, len(res.Removed))
	for _, r := range res.Removed {
		total += r.Size
		rows = append(rows, pruned{Path: r.Path, Key: r.Key, Bytes: r.Size, Reason: r.Reason})
		if opts.Output != "json" {
			fmt.Fprintf(io.Out(), "%s %s (%s, %s)\n", verb, r.Path, humanBytes(r.Size), r.Reason)
		}
	}
	for _, s := range res.Skipped {
		if opts.Output != "json" {
			fmt.Fprintf(io.Out(), "skipped %s (%s)\n", s.Path, s.Reason)
		} else { // the JSON array lists only what was removed; stderr says what was not
			slog.Warn("prune skipped", "path", s.Path, "reason", s.Reason)
		}
	}
	if opts.Output == "json" {
		if jerr := writeJSON(io.Out(), rows); jerr != nil && err == nil {
			err = jerr
		}
	}
	slog.Info("prune", "entries", len(res.Removed), "skipped", len(res.Skipped), "bytes", humanBytes(total), "dryRun", p.DryRun)
	return err
}

// loaded is what cache load did, as -o json prints it.
type loaded struct {
	Key     string  `json:"key"`
	ImageID string  `json:"imageId"`
	Loaded  bool    `json:"loaded"` // false: the engine already had it
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// CacheLoad makes sure the engine at DOCKER_HOST has a cached image, loading it if not.
func CacheLoad(ctx context.Context, io iostreams.Streams, opts *CacheOptions) error {
	prefix := opts.Key
	c, err := OpenCache(opts)
	if err != nil {
		return err
	}
	key, err := c.Resolve(prefix)
	if err != nil {
		return exitcode.Usagef("list keys with 'benchctl cache ls'", "%v", err)
	}
	eng, err := image.Connect()
	if err != nil {
		return err
	}
	defer eng.Close()
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	res, err := image.Ensure(ctx, eng, c, key, pp.Func())
	var inc *image.IncompleteError
	if errors.As(err, &inc) {
		return err // says what is missing, and what to do
	}
	if errors.Is(err, image.ErrNotCached) {
		return fmt.Errorf("key %s is not in the cache %s", image.ShortKey(key), c.Dir)
	}
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		return writeJSON(io.Out(), loaded{Key: key, ImageID: res.ImageID, Loaded: res.Loaded, Bytes: res.Bytes, Seconds: res.Duration.Seconds()})
	}
	state := "already present"
	if res.Loaded {
		state = "loaded " + humanBytes(res.Bytes)
	}
	fmt.Fprintf(io.Out(), "%s  %s  %s (%s)\n", image.ShortKey(key), res.ImageID, state, res.Duration.Round(time.Millisecond))
	return nil
}
