package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/spf13/cobra"
)

type cacheOptions struct {
	sharedDir string
	output    string // -o of the subcommand that runs
}

func newCacheCmd(io iostreams.Streams) *cobra.Command {
	opts := &cacheOptions{}
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Inspect and maintain the shared image tar cache",
		Long: `Inspect and maintain the content-addressed image cache in the shared directory
(cache/images/<key>.tar, .tar.sha256 and .json per entry). Keys may be abbreviated to a
unique prefix of at least 4 hex digits.`,
		Example: `  benchctl cache ls
  benchctl cache verify
  benchctl cache prune --older-than 720h --keep 5 --dry-run
  DOCKER_HOST=unix:///run/docker.sock benchctl cache load a1d05fcf`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("try 'benchctl cache ls'", "'benchctl cache' needs a subcommand: ls, verify, prune or load")
		},
	}
	cmd.PersistentFlags().StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	_ = cmd.MarkPersistentFlagDirname("shared-dir")
	cmd.AddCommand(newCacheLsCmd(io, opts), newCacheVerifyCmd(io, opts), newCachePruneCmd(io, opts), newCacheLoadCmd(io, opts))
	return cmd
}

func openCache(opts *cacheOptions) (*image.Cache, error) {
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return nil, err
	}
	return image.CacheIn(dir) // ls, verify, prune and load create nothing
}

func newCacheLsCmd(io iostreams.Streams, opts *cacheOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List cached images",
		Long:    "List the published images of the cache, newest first: key, tag, size, builder, age.",
		Example: "  benchctl cache ls\n  benchctl cache ls -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cacheLsRun(cmd.Context(), io, opts)
		},
	}
	outputFlag(cmd, &opts.output, "table", "json")
	return cmd
}

func cacheLsRun(ctx context.Context, io iostreams.Streams, opts *cacheOptions) error {
	c, err := openCache(opts)
	if err != nil {
		return err
	}
	entries, err := c.List()
	if err != nil {
		return err
	}
	if opts.output == "json" {
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

func newCacheVerifyCmd(io iostreams.Streams, opts *cacheOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [KEY]",
		Short: "Check cached tars against their checksums",
		Long: `Re-read cached tars and compare them with their sha256 and with the XXH64 that loads
verify. A damaged entry is moved aside
(cache/images/corrupt/) so that it is never loaded, and the next build or run rebuilds it.
A symbolic link, FIFO or other non-regular file in place of an entry's tar, checksum or
metadata is never followed or read: the entry fails as incomplete and is moved aside.
Exit 1 if any entry was damaged.`,
		Example:           "  benchctl cache verify\n  benchctl cache verify a1d05fcf\n  benchctl cache verify -o json",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeCacheKeys(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cacheVerifyRun(cmd.Context(), io, opts, args)
		},
	}
	outputFlag(cmd, &opts.output, "table", "json")
	return cmd
}

// cacheVerifyRun verifies the entry of the key prefix given (prefixes holds at most one),
// or every entry when none is given.
func cacheVerifyRun(ctx context.Context, io iostreams.Streams, opts *cacheOptions, prefixes []string) error {
	c, err := openCache(opts)
	if err != nil {
		return err
	}
	var keys []string
	if len(prefixes) == 1 {
		k, err := c.Resolve(prefixes[0])
		if err != nil {
			return usagef("list keys with 'benchctl cache ls'", "%v", err)
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
		if opts.output == "json" {
			continue
		}
		if v.OK {
			fmt.Fprintf(io.Out(), "%s  ok\n", image.ShortKey(k))
		} else {
			fmt.Fprintf(io.Out(), "%s  FAILED  %s\n", image.ShortKey(k), v.Error)
		}
	}
	if opts.output == "json" {
		if err := writeJSON(io.Out(), checked); err != nil {
			return err
		}
	}
	if bad > 0 {
		return &cacheFailure{n: bad}
	}
	return nil
}

type pruneOptions struct {
	olderThan time.Duration
	keep      int
	dryRun    bool
	limit     bool // --keep or --older-than was given (set in RunE): without, no entry is removed
}

// pruned is one file cache prune removed (or, with --dry-run, would remove), as -o json
// prints it.
type pruned struct {
	Path   string `json:"path"`
	Key    string `json:"key,omitempty"`
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
}

func newCachePruneCmd(io iostreams.Streams, opts *cacheOptions) *cobra.Command {
	p := &pruneOptions{}
	cmd := &cobra.Command{
		Use:   "prune [--older-than D] [--keep N] [--dry-run]",
		Short: "Remove old cache entries and leftovers",
		Long: `Remove entries created longer ago than --older-than, except the newest --keep: --keep alone
removes all but the newest N (--keep 0: every entry), --older-than alone every entry older
than D (--older-than 0s: any age). Without either no complete entry is removed. Leftovers of
killed builders (temp files older than an hour), build lock files older than an hour that no
builder holds, incomplete entries (a tar without valid metadata or checksum) and corrupt
entries moved aside (older than --older-than, when given) are removed in every case.
--dry-run only lists.

Only names benchctl writes are removed, each where it was found: a symbolic link is
removed itself, never followed. Corrupt entries are removed from cache/images/corrupt/
only when that is a folder (not a link) of the user running prune or of root; anything
else there (other names, folders, another user's quarantine) is left and listed as
skipped, with why.`,
		Example: "  benchctl cache prune --older-than 720h --keep 5 --dry-run\n  benchctl cache prune --keep 10\n  benchctl cache prune --keep 0 --dry-run -o json   # everything",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if p.keep < 0 || p.olderThan < 0 {
				return usagef("--keep and --older-than must not be negative", "invalid prune limits")
			}
			p.limit = cmd.Flags().Changed("keep") || cmd.Flags().Changed("older-than")
			return cachePruneRun(cmd.Context(), io, opts, p)
		},
	}
	outputFlag(cmd, &opts.output, "table", "json")
	cmd.Flags().DurationVar(&p.olderThan, "older-than", 0, "remove entries created longer ago than this (e.g. 720h)")
	cmd.Flags().IntVar(&p.keep, "keep", 0, "always keep the newest N entries")
	cmd.Flags().BoolVar(&p.dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func cachePruneRun(ctx context.Context, io iostreams.Streams, opts *cacheOptions, p *pruneOptions) error {
	c, err := openCache(opts)
	if err != nil {
		return err
	}
	res, err := c.Prune(image.PruneOptions{Limit: p.limit, OlderThan: p.olderThan, Keep: p.keep, DryRun: p.dryRun})
	verb := "removed"
	if p.dryRun {
		verb = "would remove"
	}
	var total int64
	rows := make([]pruned, 0, len(res.Removed))
	for _, r := range res.Removed {
		total += r.Size
		rows = append(rows, pruned{Path: r.Path, Key: r.Key, Bytes: r.Size, Reason: r.Reason})
		if opts.output != "json" {
			fmt.Fprintf(io.Out(), "%s %s (%s, %s)\n", verb, r.Path, humanBytes(r.Size), r.Reason)
		}
	}
	for _, s := range res.Skipped {
		if opts.output != "json" {
			fmt.Fprintf(io.Out(), "skipped %s (%s)\n", s.Path, s.Reason)
		} else { // the JSON array lists only what was removed; stderr says what was not
			slog.Warn("prune skipped", "path", s.Path, "reason", s.Reason)
		}
	}
	if opts.output == "json" {
		if jerr := writeJSON(io.Out(), rows); jerr != nil && err == nil {
			err = jerr
		}
	}
	slog.Info("prune", "entries", len(res.Removed), "skipped", len(res.Skipped), "bytes", humanBytes(total), "dryRun", p.dryRun)
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

func newCacheLoadCmd(io iostreams.Streams, opts *cacheOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "load KEY",
		Short: "Make sure the engine at DOCKER_HOST has a cached image",
		Long: `Load a cached image into the Docker Engine at DOCKER_HOST unless it already has it (what
'benchctl run' does on every node). The tar is verified against its checksum while it streams;
a damaged tar is never loaded.`,
		Example:           "  benchctl cache load a1d05fcf\n  srun benchctl cache load a1d05fcf   # pre-stage an image on every node",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeCacheKeys(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cacheLoadRun(cmd.Context(), io, opts, args[0])
		},
	}
	outputFlag(cmd, &opts.output, "table", "json")
	return cmd
}

func cacheLoadRun(ctx context.Context, io iostreams.Streams, opts *cacheOptions, prefix string) error {
	c, err := openCache(opts)
	if err != nil {
		return err
	}
	key, err := c.Resolve(prefix)
	if err != nil {
		return usagef("list keys with 'benchctl cache ls'", "%v", err)
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
	if opts.output == "json" {
		return writeJSON(io.Out(), loaded{Key: key, ImageID: res.ImageID, Loaded: res.Loaded, Bytes: res.Bytes, Seconds: res.Duration.Seconds()})
	}
	state := "already present"
	if res.Loaded {
		state = "loaded " + humanBytes(res.Bytes)
	}
	fmt.Fprintf(io.Out(), "%s  %s  %s (%s)\n", image.ShortKey(key), res.ImageID, state, res.Duration.Round(time.Millisecond))
	return nil
}

// completeCacheKeys completes cache keys (short form) with their tags as descriptions.
func completeCacheKeys(opts *cacheOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := openCache(opts)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		entries, _ := c.List()
		var out []string
		for _, e := range entries {
			tag := ""
			if len(e.Tags) > 0 {
				tag = e.Tags[0]
			}
			out = append(out, image.ShortKey(e.Key)+"\t"+tag)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
