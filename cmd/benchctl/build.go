package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/benchctl/benchctl/image"
	"github.com/spf13/cobra"
)

type buildOptions struct {
	manifest      string
	sharedDir     string
	builder       string
	engineBuilder string
	buildkitAddr  string
	noCache       bool
	record        string
	output        string
}

func newBuildCmd(io streams) *cobra.Command {
	opts := &buildOptions{}
	cmd := &cobra.Command{
		Use:   "build --manifest FILE",
		Short: "Build the manifest's image once and publish it to the shared tar cache",
		Long: `Build the image a manifest describes and publish it as a docker-archive tar to the
content-addressed cache in the shared directory (cache/images/<key>.tar, with its sha256
and metadata). The key is a digest of everything that determines the image: Dockerfile,
build context (honouring .dockerignore), build args, target, platform, and the base images'
FROM references as written (a tag that moves to another image is not seen: pin bases by
digest, FROM image@sha256:..., or rebuild with --no-cache).

A key that is already published is a cache hit: nothing is built or saved. Two builds of the
same key at once build it once (the second waits for the first). A failed build exits 2
with the failing step and the end of its log.

Builders: docker (the Docker Engine at DOCKER_HOST, then docker save into the cache) or
buildkit (a buildkitd at --buildkit-addr or BUILDKIT_HOST, exporting the tar straight into
the cache; no engine needed).`,
		Example: `  benchctl build --manifest models/cpubench/benchmark.yaml
  benchctl build --manifest m.yaml --shared-dir /shared/benchctl --record build.json
  BUILDKIT_HOST=unix:///run/buildkit/buildkitd.sock benchctl build -m m.yaml --builder buildkit`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.manifest == "" {
				return usagef("give the manifest: benchctl build --manifest m.yaml", "--manifest is required")
			}
			if err := checkOutput("--builder", opts.builder, "docker", "buildkit"); err != nil {
				return err
			}
			if err := checkOutput("--engine-builder", opts.engineBuilder, "auto", "classic", "buildkit"); err != nil {
				return err
			}
			if err := checkOutput("--output", opts.output, "text", "json"); err != nil {
				return err
			}
			if opts.builder == "buildkit" && cmd.Flags().Changed("engine-builder") {
				return usagef("--engine-builder picks the Docker Engine's own builder; drop it, or use --builder docker", "--engine-builder applies only to --builder docker")
			}
			if opts.builder == "docker" && cmd.Flags().Changed("buildkit-addr") {
				return usagef("add --builder buildkit to build with that buildkitd", "--buildkit-addr applies only to --builder buildkit")
			}
			return buildRun(cmd, io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.manifest, "manifest", "m", "", "manifest file (.yaml, .yml or .json)")
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	f.StringVar(&opts.builder, "builder", "docker", "builder: docker or buildkit")
	f.StringVar(&opts.engineBuilder, "engine-builder", "auto", "with --builder docker: the engine's builder: auto, classic or buildkit")
	f.StringVar(&opts.buildkitAddr, "buildkit-addr", "", "buildkitd address for --builder buildkit (default $BUILDKIT_HOST)")
	f.BoolVar(&opts.noCache, "no-cache", false, "build and publish again even if the key is cached")
	f.StringVar(&opts.record, "record", "", "write the build record (JSON) to this file")
	f.StringVarP(&opts.output, "output", "o", "text", "output format: text or json")
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	return cmd
}

func buildRun(cmd *cobra.Command, io streams, opts *buildOptions) error {
	ctx := cmd.Context()
	m, err := loadManifest(opts.manifest)
	if err != nil {
		return err
	}
	if opts.record != "" {
		// Found out now, not after a build of an hour.
		if st, err := os.Stat(filepath.Dir(opts.record)); err != nil || !st.IsDir() {
			return usagef("create the folder first, or pick another --record path", "--record %s: the folder %s does not exist", opts.record, filepath.Dir(opts.record))
		}
		if st, err := os.Stat(opts.record); err == nil && st.IsDir() {
			return usagef("give a file path, e.g. --record build.json", "--record %s is a folder", opts.record)
		}
	}
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	cache, err := image.OpenCache(dir)
	if err != nil {
		return err
	}
	builder, closeBuilder, err := newBuilder(opts.builder, opts.engineBuilder, opts.buildkitAddr)
	if err != nil {
		return err
	}
	defer closeBuilder()
	pp := newProgressPrinter(io.err, isTerminal(io.err))
	slog.Info("building", "manifest", m.Name, "builder", builder.Name(), "cache", cache.Dir)
	rec, err := image.Build(ctx, image.BuildOptions{Manifest: m, Cache: cache, Builder: builder, NoCache: opts.noCache,
		Progress: pp.Func(), Version: currentBuild().Version})
	if err != nil {
		return err
	}
	for _, n := range rec.Notes {
		slog.Warn(n)
	}
	if rec.CacheHit {
		slog.Info("cache hit: the image is already published; nothing built or saved", "key", image.ShortKey(rec.Key))
	} else {
		slog.Info("built and published", "key", image.ShortKey(rec.Key), "seconds", fmt.Sprintf("%.1f", rec.Durations.Total))
	}
	if opts.record != "" {
		if err := image.WriteRecord(opts.record, rec); err != nil {
			return err
		}
	}
	if opts.output == "json" {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		return enc.Encode(rec)
	}
	hit := "no (built)"
	if rec.CacheHit {
		hit = "yes"
	}
	fmt.Fprintf(io.out, "key:       %s\nimage:     %s\ntag:       %s\nsize:      %s\ntar:       %s\ncache hit: %s\n",
		rec.Key, rec.ImageID, rec.Tag, humanBytes(rec.Size), rec.Tar, hit)
	return nil
}

// newBuilder makes the chosen builder; the returned func releases it.
func newBuilder(kind, engineBuilder, buildkitAddr string) (image.Builder, func(), error) {
	switch kind {
	case "buildkit":
		return newBuildKitBuilder(buildkitAddr)
	default:
		c, err := image.Connect()
		if err != nil {
			return nil, nil, err
		}
		v := engineBuilder
		if v == "auto" {
			v = ""
		}
		return &image.DockerBuilder{Engine: c, Version: v}, func() { c.Close() }, nil
	}
}
