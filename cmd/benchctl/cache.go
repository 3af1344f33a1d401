package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
)

// cacheRuns are the cache subcommands' work: ls, verify, prune and load.
type cacheRuns struct{ ls, verify, prune, load runF[*commands.CacheOptions] }

func newCacheCmd(io iostreams.Streams, runs cacheRuns) *cobra.Command {
	opts := &commands.CacheOptions{}
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
	cmd.PersistentFlags().StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	_ = cmd.MarkPersistentFlagDirname("shared-dir")
	cmd.AddCommand(newCacheLsCmd(io, opts, runs.ls.or(commands.CacheLs)), newCacheVerifyCmd(io, opts, runs.verify.or(commands.CacheVerify)),
		newCachePruneCmd(io, opts, runs.prune.or(commands.CachePrune)), newCacheLoadCmd(io, opts, runs.load.or(commands.CacheLoad)))
	return cmd
}

func newCacheLsCmd(io iostreams.Streams, opts *commands.CacheOptions, run runF[*commands.CacheOptions]) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List cached images",
		Long:    "List the published images of the cache, newest first: key, tag, size, builder, age.",
		Example: "  benchctl cache ls\n  benchctl cache ls -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), io, opts)
		},
	}
	outputFlag(cmd, &opts.Output, "table", "json")
	return cmd
}

func newCacheVerifyCmd(io iostreams.Streams, opts *commands.CacheOptions, run runF[*commands.CacheOptions]) *cobra.Command {
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
			opts.Keys = args
			return run(cmd.Context(), io, opts)
		},
	}
	outputFlag(cmd, &opts.Output, "table", "json")
	return cmd
}

func newCachePruneCmd(io iostreams.Streams, opts *commands.CacheOptions, run runF[*commands.CacheOptions]) *cobra.Command {
	p := &opts.Prune
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
			if p.Keep < 0 || p.OlderThan < 0 {
				return usagef("--keep and --older-than must not be negative", "invalid prune limits")
			}
			p.Limit = cmd.Flags().Changed("keep") || cmd.Flags().Changed("older-than")
			return run(cmd.Context(), io, opts)
		},
	}
	outputFlag(cmd, &opts.Output, "table", "json")
	cmd.Flags().DurationVar(&p.OlderThan, "older-than", 0, "remove entries created longer ago than this (e.g. 720h)")
	cmd.Flags().IntVar(&p.Keep, "keep", 0, "always keep the newest N entries")
	cmd.Flags().BoolVar(&p.DryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func newCacheLoadCmd(io iostreams.Streams, opts *commands.CacheOptions, run runF[*commands.CacheOptions]) *cobra.Command {
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
			opts.Key = args[0]
			return run(cmd.Context(), io, opts)
		},
	}
	outputFlag(cmd, &opts.Output, "table", "json")
	return cmd
}

// completeCacheKeys completes cache keys (short form) with their tags as descriptions.
func completeCacheKeys(opts *commands.CacheOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := commands.OpenCache(opts)
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
