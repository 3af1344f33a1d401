package commands

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
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/models"
)

// BuildOptions are benchctl build's flags.
type BuildOptions struct {
	Src           ManifestSource
	SharedDir     string
	Builder       string
	EngineBuilder string
	BuildkitAddr  string
	NoCache       bool
	Push          string
	Record        string
	Output        string
	TargetArchs   []string
	Engine        string
	BenchctlImage bool // --benchctl-image: make and push the benchctl image, not a manifest's
}

// Build builds the manifest's images (once per --target-archs architecture) and publishes
// them to the shared tar cache, or --push to a registry.
func Build(ctx context.Context, io iostreams.Streams, opts *BuildOptions) error {
	if opts.BenchctlImage {
		return PushBenchctlImage(ctx, io, opts.Push, opts.Engine)
	}
	m, err := opts.Src.load()
	if err != nil {
		return err
	}
	if opts.Record != "" {
		// Found out now, not after a build of an hour.
		if st, err := os.Stat(filepath.Dir(opts.Record)); err != nil || !st.IsDir() {
			return exitcode.Usagef("create the folder first, or pick another --record path", "--record %s: the folder %s does not exist", opts.Record, filepath.Dir(opts.Record))
		}
		if st, err := os.Stat(opts.Record); err == nil && st.IsDir() {
			return exitcode.Usagef("give a file path, e.g. --record build.json", "--record %s is a folder", opts.Record)
		}
	}
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	cache, err := image.OpenCache(dir)
	if err != nil {
		return err
	}
	builder, closeBuilder, err := newBuilder(ctx, opts.Builder, opts.EngineBuilder, opts.BuildkitAddr, engineKind(opts.Engine, m))
	if err != nil {
		return err
	}
	defer closeBuilder()
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	slog.Info("building", "manifest", m.Name, "builder", builder.Name(), "cache", cache.Dir)
	archs, _ := models.ParseTargetArchs(opts.TargetArchs) // checked before
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
			BuildOptions: image.BuildOptions{Manifest: ma, Cache: cache, Builder: builder, NoCache: opts.NoCache,
				Progress: pp.Func(), Version: CurrentBuild().Version},
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
	if opts.Push != "" {
		if err := pushBuilt(ctx, cache, recs, opts.Push, engineKind(opts.Engine, m), pp.Func()); err != nil {
			return err
		}
	}
	if opts.Record != "" {
		if err := image.WriteRecords(opts.Record, recs); err != nil {
			return err
		}
	}
	if opts.Output == "json" {
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
