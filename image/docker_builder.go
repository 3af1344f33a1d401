package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	controlapi "github.com/moby/buildkit/api/services/control"
	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/benchctl/benchctl/internal/progress"
)

// DockerBuilder builds through a Docker Engine's API and saves the result into the cache.
type DockerBuilder struct {
	Engine Engine
	// Version selects the engine's builder: "" (auto: BuildKit when the engine advertises
	// it as its builder, classic otherwise), "classic" or "buildkit".
	Version string
}

var _ Builder = (*DockerBuilder)(nil)

// Name is "docker".
func (b *DockerBuilder) Name() string { return "docker" }

var (
	// stepRE: a step's first line, Docker's classic builder's ("Step 2/3 : RUN ...") or
	// Podman's compatible build's (buildah's "STEP 2/3: RUN ...": podmanStepRE).
	stepRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Step \d+/\d+ : |^STEP \d+/\d+: `) })
	podmanStepRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^STEP \d+/\d+: `) })
	// builderChatterRE: the builder's own lines, not a step's output (the classic builder's,
	// and buildah's layer ids and commits).
	builderChatterRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^ ---> |^Removing intermediate container [0-9a-f]+$|^--> [0-9a-f]+$|^COMMIT( |$)`)
	})
)

// stderrColour starts the classic builder's stream messages that carry a step's stderr.
const stderrColour = "\x1b[91m"

func (b *DockerBuilder) builderVersion(ctx context.Context) (build.BuilderVersion, error) {
	switch b.Version {
	case "classic":
		return build.BuilderV1, nil
	case "buildkit":
		return build.BuilderBuildKit, nil
	case "":
	default:
		return "", fmt.Errorf("unknown engine builder %q (auto, classic or buildkit)", b.Version)
	}
	if p, ok := b.Engine.(interface {
		Ping(context.Context, client.PingOptions) (client.PingResult, error)
	}); ok {
		if res, err := p.Ping(ctx, client.PingOptions{}); err == nil && res.BuilderVersion == build.BuilderBuildKit {
			return build.BuilderBuildKit, nil
		}
	}
	return build.BuilderV1, nil
}

// Build runs the build on the engine, then streams `docker save` of the tag into the cache
// (unless req.EngineOnly).
func (b *DockerBuilder) Build(ctx context.Context, req BuildRequest) (*Entry, error) {
	files, err := walkContext(req.Input)
	if err != nil {
		return nil, err
	}
	version, err := b.builderVersion(ctx)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	sent := make(chan error, 1)                                         // the context writer's own error
	cnt := progress.NewCounter(req.Progress, "context", tarSize(files)) // the engine reads it all before step 1
	go func() {
		_, err := writeContextTar(progress.Writer{W: pw, C: cnt}, req.Input, files)
		if err == nil {
			cnt.Finish()
		}
		pw.CloseWithError(err)
		sent <- err
	}()
	// The Dockerfile's name is known before any byte is sent.
	name := dockerfileName(req.Input)
	args := map[string]*string{}
	for _, a := range req.Input.BuildArgs {
		v := a.Value
		args[a.Name] = &v
	}
	opts := client.ImageBuildOptions{
		Tags: []string{req.Tag}, Dockerfile: name, BuildArgs: args, Target: req.Input.Target,
		Labels: req.labels(), NoCache: req.NoCache, Remove: true, ForceRemove: true, Version: version,
		NetworkMode: "host",
	}
	if req.Input.Platform != "" {
		parts := strings.Split(req.Input.Platform, "/")
		p := ocispec.Platform{OS: parts[0], Architecture: parts[1]}
		if len(parts) == 3 {
			p.Variant = parts[2]
		}
		opts.Platforms = []ocispec.Platform{p}
	}
	resp, err := b.Engine.ImageBuild(ctx, pr, opts)
	if err != nil {
		pr.CloseWithError(err)
		// The client reports a failed read of the request body (the context) as a failed
		// connection too: a context file that vanished or could not be read is the cause then.
		if cerr := <-sent; cerr != nil && cerr != err && !errors.Is(cerr, io.ErrClosedPipe) {
			return nil, &BuildError{Builder: "docker", Err: fmt.Errorf("sending the build context %s: %w", req.Input.Context, cerr)}
		}
		if client.IsErrConnectionFailed(err) { // not a build failure: nothing was built
			return nil, engineError(EngineHostOf(b.Engine), err)
		}
		return nil, &BuildError{Builder: "docker", Err: fmt.Errorf("engine at %s: %w", EngineHostOf(b.Engine), err)}
	}
	id, berr := b.follow(resp.Body, req.Progress)
	resp.Body.Close()
	pr.Close()
	<-sent // the context writer is done (and reports nothing after Build returns)
	if berr != nil {
		return nil, berr
	}
	if id == "" {
		if got, ok, err := hasImage(ctx, b.Engine, req.Tag); err == nil && ok {
			id = got
		} else {
			return nil, &BuildError{Builder: "docker", Err: errors.New("the engine reported no image id")}
		}
	}
	if req.EngineOnly {
		return &Entry{Meta: Meta{ImageID: id, Key: req.Key, Tags: []string{req.Tag}, Builder: "docker", Manifest: req.Manifest, Benchctl: req.Version}}, nil
	}
	return b.save(ctx, req, id)
}

// dockerfileName is the Dockerfile's path inside the context tar.
func dockerfileName(in BuildInput) string {
	if rel, ok := relInside(in.Context, in.Dockerfile); ok {
		return rel
	}
	return dockerfileInContext
}

// buildkitTraceID marks the engine's BuildKit status messages: aux is a StatusResponse
// (protobuf, base64 in JSON).
const buildkitTraceID = "moby.buildkit.trace"

// follow reads the build's JSON stream: step lines, the image id, errors with a log tail.
// The classic builder streams "Step n/m" lines and their output; the engine's BuildKit
// streams status updates, followed as the BuildKit builder follows buildkitd's.
func (b *DockerBuilder) follow(r io.Reader, progress ProgressFunc) (string, error) {
	var id, step string
	var buildErr error // the engine's error message
	t := &tail{n: 30}
	bk := &buildkitFollower{progress: progress, logs: map[string]*tail{}, names: map[string]string{}}
	fail := func(err error) error {
		if bk.failed != "" {
			return &BuildError{Builder: "docker", Step: bk.failed, Tail: bk.failedTail(), Err: err}
		}
		return &BuildError{Builder: "docker", Step: step, Tail: t.get(), Err: err}
	}
	dec := json.NewDecoder(r)
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err == io.EOF {
			if buildErr != nil {
				return "", fail(buildErr)
			}
			return id, nil
		} else if err != nil {
			if buildErr != nil { // the engine's own message says more than a broken stream after it
				return "", fail(buildErr)
			}
			return "", fail(fmt.Errorf("reading the build output: %w", err))
		}
		if err := m.err(); err != nil && buildErr == nil {
			// Read on to the end: the engine's BuildKit may send the last status updates
			// (the failing step's last log lines) after the error.
			buildErr = err
			continue
		}
		if buildErr != nil && m.ID != buildkitTraceID {
			continue
		}
		if m.ID == buildkitTraceID && len(m.Aux) > 0 {
			var raw []byte // base64 in the JSON
			var sr controlapi.StatusResponse
			if json.Unmarshal(m.Aux, &raw) == nil && sr.UnmarshalVT(raw) == nil {
				bk.update(bkclient.NewSolveStatus(&sr))
			}
			continue
		}
		if len(m.Aux) > 0 {
			var aux struct{ ID string }
			if json.Unmarshal(m.Aux, &aux) == nil && strings.HasPrefix(aux.ID, "sha256:") {
				id = aux.ID
			}
		}
		// The classic builder colours what a step printed on stderr.
		stderr := strings.HasPrefix(m.Stream, stderrColour)
		for _, line := range strings.Split(trimLine(m.Stream), "\n") {
			if line = strings.TrimRight(ansiRE().ReplaceAllString(line, ""), " \r"); line == "" {
				continue
			}
			switch {
			case stepRE().MatchString(line):
				step = line
				t.reset()
				if podmanStepRE().MatchString(line) {
					// Podman marks no line as stderr and forwards stdout and stderr in no
					// fixed order: a step's reason can come before its last lines, so its
					// first lines are kept too.
					t.head = unmarkedHead
				}
			case !builderChatterRE().MatchString(line):
				t.add(line, stderr)
			}
			if progress != nil {
				progress(Progress{Phase: "build", Step: line})
			}
		}
	}
}

// save streams `docker save` of the built image into the cache.
func (b *DockerBuilder) save(ctx context.Context, req BuildRequest, id string) (*Entry, error) {
	meta := Meta{ImageID: id, Tags: []string{req.Tag}, Builder: "docker", Manifest: req.Manifest, Benchctl: req.Version}
	return PublishFromEngine(ctx, b.Engine, req.Cache, req.Key, req.Tag, meta, req.Progress)
}

// PublishFromEngine streams an engine's `docker save` of ref into the cache under key.
func PublishFromEngine(ctx context.Context, eng Engine, c *Cache, key, ref string, meta Meta, progress ProgressFunc) (*Entry, error) {
	var expected int64 // docker save's tar is the layers plus a little: a good estimate
	if res, err := eng.ImageInspect(ctx, ref); err == nil {
		expected = res.Size
	}
	return c.Publish(ctx, key, meta, expected, func(w io.Writer, _ *Meta) error {
		rc, err := eng.ImageSave(ctx, []string{ref})
		if err != nil {
			return fmt.Errorf("saving %s from the engine: %w", ref, err)
		}
		defer rc.Close()
		if _, err := io.Copy(w, rc); err != nil {
			return fmt.Errorf("saving %s from the engine: %w", ref, err)
		}
		return nil
	}, progress)
}
