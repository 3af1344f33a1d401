package main

import (
	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/models"
)

func newBuildCmd(io iostreams.Streams, run runF[*commands.BuildOptions]) *cobra.Command {
	run = run.or(commands.Build)
	opts := &commands.BuildOptions{}
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
the cache; no engine needed).

--benchctl-image --push REF makes benchctl's own image instead, for Kubernetes jobs (the
manifest's kubernetes.benchctlImage): this benchctl and its agent, which must be the static
build (CGO_ENABLED=0 make build), and nothing else; it is loaded into the engine and pushed
with the docker CLI's credentials, and its pushed name is printed.`,
		Example: `  benchctl build --manifest models/cpubench/benchmark.yaml
  benchctl build --manifest m.yaml --shared-dir /shared/benchctl --record build.json
  BUILDKIT_HOST=unix:///run/buildkit/buildkitd.sock benchctl build -m m.yaml --builder buildkit
  benchctl build --tags vllm --context '{"gpu_vendor": "AMD"}'
  benchctl build --benchctl-image --push registry.example.com/team/benchctl:1`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.BenchctlImage {
				for _, name := range []string{"manifest", "tags", "record", "target-archs", "builder", "no-cache"} {
					if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
						return usagef("build --benchctl-image --push REF makes benchctl's own image; build a manifest's images in another run", "--%s does not go with --benchctl-image", name)
					}
				}
				if opts.Push == "" {
					return usagef("give the registry reference to push it to: --push registry.example.com/team/benchctl:1", "--benchctl-image needs --push")
				}
				return run(cmd.Context(), io, opts)
			}
			if err := opts.Src.Check(cmd.Name()); err != nil {
				return err
			}
			if opts.Push != "" { // found out now, not after a build of an hour
				if _, err := image.RegistryOf(opts.Push); err != nil {
					return usagef("give a reference such as registry.example.com:5000/team/bench:1 (lower-case repository)", "--push %q is not an image reference: %v", opts.Push, err)
				}
			}
			if opts.Builder == "buildkit" && cmd.Flags().Changed("engine-builder") {
				return usagef("--engine-builder picks the Docker Engine's own builder; drop it, or use --builder docker", "--engine-builder applies only to --builder docker")
			}
			if opts.Builder == "docker" && cmd.Flags().Changed("buildkit-addr") {
				return usagef("add --builder buildkit to build with that buildkitd", "--buildkit-addr applies only to --builder buildkit")
			}
			if _, err := models.ParseTargetArchs(opts.TargetArchs); err != nil { // found out before any build
				return err
			}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	addSourceFlags(&opts.Src, cmd, f)
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory (default $BENCHCTL_SHARED_DIR)")
	choiceFlag(cmd, f, &opts.Builder, "builder", "", "docker", "builder: docker or buildkit", "docker", "buildkit")
	choiceFlag(cmd, f, &opts.EngineBuilder, "engine-builder", "", "auto", "with --builder docker: the engine's builder: auto, classic or buildkit", "auto", "classic", "buildkit")
	engineFlag(cmd, &opts.Engine)
	f.StringVar(&opts.BuildkitAddr, "buildkit-addr", "", "buildkitd address for --builder buildkit (default $BUILDKIT_HOST)")
	f.BoolVar(&opts.NoCache, "no-cache", false, "build and publish again even if the key is cached")
	f.StringVar(&opts.Push, "push", "", "also push the built image to this registry reference (REGISTRY/NAME:TAG; for several images a repository, each tagged with its key), with the docker CLI's credentials")
	f.StringVar(&opts.Record, "record", "", "write the build record (JSON) to this file")
	f.BoolVar(&opts.BenchctlImage, "benchctl-image", false, "with --push: make the benchctl image a Kubernetes job's pods copy benchctl from (this static benchctl and its agent, nothing else) and push it, instead of a manifest's images")
	f.StringSliceVar(&opts.TargetArchs, "target-archs", nil, "build each image once per GPU architecture (comma-separated gfx names, e.g. gfx90a,gfx942), passing it as the build arg "+models.ArchBuildArg+", as madengine build --target-archs does")
	outputFlag(cmd, &opts.Output, "table", "json")
	_ = cmd.MarkFlagFilename("record", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	return cmd
}
