package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
	"github.com/spf13/cobra"
)

type buildOptions struct {
	src           manifestSource
	sharedDir     string
	builder       string
	engineBuilder string
	buildkitAddr  string
	noCache       bool
	push          string
	record        string
	output        string
	targetArchs   []string
	engine        string
}

func newBuildCmd(io iostreams.Streams) *cobra.Command {
	opts := &buildOptions{}
	cmd := &cobra.Command{
		Use:   "build (--manifest FILE | --tags TAGS [--context JSON])",
		Short: "Build the manifest's images once and publish them to the shared tar cache",
		Long: `Build the images a manifest describes and publish each as a docker-archive tar to the
content-addressed cache in the shared directory (cache/images/<key>.tar, with its sha256
and metadata). The key is a digest of everything that determines the image: Dockerfile,
build context (honouring .dockerignore), build args, target, platform, and the base images'
FROM references as written (a tag that moves to another image is not seen: pin bases by
digest, FROM image@sha256:..., or rebuild with --no-cache).

A key that is already published is a cache hit: nothing is built or saved. Two builds of the
same key at once build it once (the second waits for the first). A failed build exits 2
with the failing step and the end of its log.

When the benchmarks run on several images (a benchmark's own image:, or a MAD catalog's
models, each built from its own Dockerfile picked by gpu.vendor), each image is built once,
one after the other, and a table lists them; a failed image does not stop the others, and
the build exits 2 naming every image that failed. --record then writes one record per image.
In a MAD checkout, --tags and --context build the images of ./models.json's models with those
tags, as run --tags would run them (see benchctl run --help).

--target-archs gfx90a,gfx942 builds every image once per GPU architecture, each with the
build arg MAD_SYSTEM_GPU_ARCHITECTURE set to it, as madengine build --target-archs does (each
is its own image and cache key); an entry that is no gfx name is refused before any build.

Builders: docker (the Docker Engine at DOCKER_HOST, then docker save into the cache) or
buildkit (a buildkitd at --buildkit-addr or BUILDKIT_HOST, exporting the tar straight into
the cache; no engine needed).`,
		Example: `  benchctl build --manifest models/cpubench/benchmark.yaml
  benchctl build --manifest m.yaml --shared-dir /shared/benchctl --record build.json
  BUILDKIT_HOST=unix:///run/buildkit/buildkitd.sock benchctl build -m m.yaml --builder buildkit
  benchctl build --tags vllm --context '{"gpu_vendor": "AMD"}'`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.src.check(cmd.Name()); err != nil {
				return err
			}
			if opts.push != "" { // found out now, not after a build of an hour
				if _, err := image.RegistryOf(opts.push); err != nil {
					return usagef("give a reference such as registry.example.com:5000/team/bench:1 (lower-case repository)", "--push %q is not an image reference: %v", opts.push, err)
				}
			}
			if opts.builder == "buildkit" && cmd.Flags().Changed("engine-builder") {
				return usagef("--engine-builder picks the Docker Engine's own builder; drop it, or use --builder docker", "--engine-builder applies only to --builder docker")
			}
			if opts.builder == "docker" && cmd.Flags().Changed("buildkit-addr") {
				return usagef("add --builder buildkit to build with that buildkitd", "--buildkit-addr applies only to --builder buildkit")
			}
			if _, err := models.ParseTargetArchs(opts.targetArchs); err != nil { // found out before any build
				return err
			}
			return buildRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	opts.src.addFlags(cmd, f)
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	choiceFlag(cmd, f, &opts.builder, "builder", "", "docker", "builder: docker or buildkit", "docker", "buildkit")
	choiceFlag(cmd, f, &opts.engineBuilder, "engine-builder", "", "auto", "with --builder docker: the engine's builder: auto, classic or buildkit", "auto", "classic", "buildkit")
	engineFlag(cmd, &opts.engine)
	f.StringVar(&opts.buildkitAddr, "buildkit-addr", "", "buildkitd address for --builder buildkit (default $BUILDKIT_HOST)")
	f.BoolVar(&opts.noCache, "no-cache", false, "build and publish again even if the key is cached")
	f.StringVar(&opts.push, "push", "", "also push the built image to this registry reference (REGISTRY/NAME:TAG; for several images a repository, each tagged with its key), with the docker CLI's credentials")
	f.StringVar(&opts.record, "record", "", "write the build record (JSON) to this file")
	f.StringSliceVar(&opts.targetArchs, "target-archs", nil, "build each image once per GPU architecture (comma-separated gfx names, e.g. gfx90a,gfx942), passing it as the build arg "+models.ArchBuildArg+", as madengine build --target-archs does")
	outputFlag(cmd, &opts.output, "table", "json")
	_ = cmd.MarkFlagFilename("record", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}

func buildRun(ctx context.Context, io iostreams.Streams, opts *buildOptions) error {
	m, err := opts.src.load()
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
	builder, closeBuilder, err := newBuilder(ctx, opts.builder, opts.engineBuilder, opts.buildkitAddr, engineKind(opts.engine, m))
	if err != nil {
		return err
	}
	defer closeBuilder()
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	slog.Info("building", "manifest", m.Name, "builder", builder.Name(), "cache", cache.Dir)
	archs, _ := models.ParseTargetArchs(opts.targetArchs) // checked before
	perArch := []*manifest.Manifest{m}
	if len(archs) > 0 {
		perArch = nil
		for _, a := range archs {
			ma, err := models.WithTargetArch(m, a)
			if err != nil {
				return err
			}
			perArch = append(perArch, ma)
		}
	}
	var built []image.BuiltImage
	var errs []error
	for i, ma := range perArch {
		if len(archs) > 0 {
			slog.Info("building for a GPU architecture", "arch", archs[i], "build arg", models.ArchBuildArg)
		}
		b, err := image.BuildAll(ctx, image.BuildAllOptions{
			BuildOptions: image.BuildOptions{Manifest: ma, Cache: cache, Builder: builder, NoCache: opts.noCache,
				Progress: pp.Func(), Version: currentBuild().Version},
			Starting: func(i, n int, use manifest.ImageUse) {
				if n > 1 {
					slog.Info(fmt.Sprintf("image %d of %d", i, n), "dockerfile", use.Image.Dockerfile, "benchmarks", strings.Join(use.Benchmarks, ","))
				}
			}})
		built = append(built, b...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	err = errors.Join(errs...)
	if len(errs) == 1 {
		err = errs[0] // its exit code and message as they are
	}
	var recs []*image.Record
	for _, b := range built {
		if b.Record == nil {
			continue
		}
		recs = append(recs, b.Record)
		for _, n := range b.Record.Notes {
			slog.Warn(n)
		}
		if b.Record.CacheHit {
			slog.Info("cache hit: the image is already published; nothing built or saved", "key", image.ShortKey(b.Record.Key))
		} else {
			slog.Info("built and published", "key", image.ShortKey(b.Record.Key), "seconds", fmt.Sprintf("%.1f", b.Record.Durations.Total))
		}
	}
	if len(built) > 1 {
		printBuilt(io, built) // what did build, also when another image failed
	}
	if err != nil {
		return err
	}
	if opts.push != "" {
		if err := pushBuilt(ctx, cache, recs, opts.push, engineKind(opts.engine, m), pp.Func()); err != nil {
			return err
		}
	}
	if opts.record != "" {
		if err := image.WriteRecords(opts.record, recs); err != nil {
			return err
		}
	}
	if opts.output == "json" {
		if len(recs) == 1 {
			return writeJSON(io.Out(), recs[0])
		}
		return writeJSON(io.Out(), struct {
			Version int             `json:"version"`
			Images  []*image.Record `json:"images"`
		}{2, recs})
	}
	if len(built) > 1 {
		return nil
	}
	rec := recs[0]
	hit := "no (built)"
	if rec.CacheHit {
		hit = "yes"
	}
	fmt.Fprintf(io.Out(), "key:       %s\nimage:     %s\ntag:       %s\nsize:      %s\ntar:       %s\ncache hit: %s\n",
		rec.Key, rec.ImageID, rec.Tag, humanBytes(rec.Size), rec.Tar, hit)
	if rec.Pushed != "" {
		fmt.Fprintf(io.Out(), "pushed:    %s\n", rec.Pushed)
	}
	return nil
}

// printBuilt is the summary table of a manifest with several images: one row each.
func printBuilt(io iostreams.Streams, built []image.BuiltImage) {
	tw := tabwriter.NewWriter(io.Out(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tBENCHMARKS\tKEY\tSIZE\tRESULT")
	for _, b := range built {
		name, key, size, result := b.Use.Image.String(), "-", "-", ""
		if b.Use.Image.Builds() {
			name = filepath.Base(name)
		}
		switch {
		case b.Err != nil:
			result = "FAILED: " + firstLine(b.Err.Error())
		case b.Record == nil:
			result = "used as it is (image.ref)"
		default:
			key, size, result = image.ShortKey(b.Record.Key), humanBytes(b.Record.Size), "built"
			if b.Record.CacheHit {
				result = "cache hit"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, strings.Join(b.Use.Benchmarks, ","), key, size, result)
	}
	tw.Flush()
}

// firstLine is s up to its first newline, cut to 160 characters.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// pushBuilt pushes the built images to the registry of ref (build --push), through the
// engine at DOCKER_HOST.
func pushBuilt(ctx context.Context, cache *image.Cache, recs []*image.Record, ref, engine string, progress image.ProgressFunc) error {
	eng, err := image.ConnectChecked(ctx, engine)
	if err != nil {
		return err
	}
	defer eng.Close()
	if err := image.PushRecords(ctx, eng, cache, recs, ref, os.LookupEnv, progress); err != nil {
		return err
	}
	for _, r := range recs {
		slog.Info("pushed", "image", r.Pushed)
	}
	return nil
}

// newBuilder makes the chosen builder; the returned func releases it.
func newBuilder(ctx context.Context, kind, engineBuilder, buildkitAddr, engine string) (image.Builder, func(), error) {
	switch kind {
	case "buildkit":
		return newBuildKitBuilder(buildkitAddr)
	default:
		c, err := image.ConnectChecked(ctx, engine)
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
