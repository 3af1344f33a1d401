package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	bkclient "github.com/moby/buildkit/client"
	"github.com/tonistiigi/fsutil"
	"github.com/tonistiigi/fsutil/types"
)

// BuildKitBuilder builds with a standalone buildkitd and exports a docker-archive tar
// straight into the cache: no Docker Engine is needed on the build host, and there is no
// separate save step.
type BuildKitBuilder struct {
	Addr string
	c    *bkclient.Client
}

var _ Builder = (*BuildKitBuilder)(nil)

// NewBuildKitBuilder connects to buildkitd at addr (e.g. unix:///run/buildkit/buildkitd.sock,
// tcp://host:1234).
func NewBuildKitBuilder(ctx context.Context, addr string) (*BuildKitBuilder, error) {
	if addr == "" {
		return nil, errors.New("no buildkitd address: give --buildkit-addr or set BUILDKIT_HOST")
	}
	c, err := bkclient.New(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to buildkitd at %s: %w", addr, err)
	}
	if _, err := c.Info(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("buildkitd at %s does not answer (is it running?): %w", addr, err)
	}
	return &BuildKitBuilder{Addr: addr, c: c}, nil
}

// Name is "buildkit".
func (b *BuildKitBuilder) Name() string { return "buildkit" }

// Close releases the connection.
func (b *BuildKitBuilder) Close() error { return b.c.Close() }

// contextFS is the build context as BuildKit receives it: exactly the entries the key
// covers (walkContext), so that the image can never contain a file the key did not see.
func contextFS(in BuildInput) (fsutil.FS, error) {
	files, err := walkContext(in)
	if err != nil {
		return nil, err
	}
	keep := make(map[string]bool, len(files))
	parents := map[string]bool{} // folders with a kept entry somewhere below
	for _, f := range files {
		keep[f.rel] = true
		for d := path.Dir(f.rel); d != "." && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
	}
	base, err := fsutil.NewFS(in.Context)
	if err != nil {
		return nil, fmt.Errorf("build context %s: %w", in.Context, err)
	}
	return fsutil.NewFilterFS(base, &fsutil.FilterOpt{Map: func(p string, st *types.Stat) fsutil.MapResult {
		rel := filepath.ToSlash(p)
		switch {
		case keep[rel]:
			return fsutil.MapResultKeep
		case os.FileMode(st.Mode).IsDir() && parents[rel]:
			return fsutil.MapResultExclude // not sent itself, but something below it is
		case os.FileMode(st.Mode).IsDir():
			return fsutil.MapResultSkipDir
		}
		return fsutil.MapResultExclude
	}})
}

// Build solves the Dockerfile with the dockerfile frontend and exports the image as a
// docker-archive into the cache.
func (b *BuildKitBuilder) Build(ctx context.Context, req BuildRequest) (*Entry, error) {
	ctxFS, err := contextFS(req.Input)
	if err != nil {
		return nil, err
	}
	dfFS, err := fsutil.NewFS(filepath.Dir(req.Input.Dockerfile))
	if err != nil {
		return nil, fmt.Errorf("dockerfile folder: %w", err)
	}
	attrs := map[string]string{"filename": filepath.Base(req.Input.Dockerfile)}
	for k, v := range req.labels() {
		attrs["label:"+k] = v
	}
	for _, a := range req.Input.BuildArgs {
		attrs["build-arg:"+a.Name] = a.Value
	}
	if req.Input.Target != "" {
		attrs["target"] = req.Input.Target
	}
	if req.Input.Platform != "" {
		attrs["platform"] = req.Input.Platform
	}
	if req.NoCache {
		attrs["no-cache"] = ""
	}
	meta := Meta{Tags: []string{req.Tag}, Builder: "buildkit", Manifest: req.Manifest, Benchctl: req.Version}
	return req.Cache.Publish(ctx, req.Key, meta, 0, func(w io.Writer, m *Meta) error {
		status := make(chan *bkclient.SolveStatus)
		fol := &buildkitFollower{progress: req.Progress, logs: map[string]*tail{}, names: map[string]string{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for s := range status {
				fol.update(s)
			}
		}()
		resp, err := b.c.Solve(ctx, nil, bkclient.SolveOpt{
			Exports: []bkclient.ExportEntry{{Type: bkclient.ExporterDocker, Attrs: map[string]string{"name": req.Tag},
				Output: func(map[string]string) (io.WriteCloser, error) { return nopWriteCloser{w}, nil }}},
			LocalMounts:   map[string]fsutil.FS{"context": ctxFS, "dockerfile": dfFS},
			Frontend:      "dockerfile.v0",
			FrontendAttrs: attrs,
		}, status)
		<-done
		if err != nil {
			return &BuildError{Builder: "buildkit", Step: fol.failed, Tail: fol.failedTail(), Err: err}
		}
		m.ImageID = resp.ExporterResponse["containerimage.config.digest"]
		if m.ImageID == "" {
			return &BuildError{Builder: "buildkit", Err: errors.New("buildkitd reported no image config digest")}
		}
		return nil
	}, req.Progress)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// buildkitFollower turns BuildKit status updates into step lines and keeps each step's
// log tail, so a failure can show the failing step's last lines.
type buildkitFollower struct {
	progress ProgressFunc
	names    map[string]string // vertex digest -> name
	logs     map[string]*tail
	started  []string
	failed   string
	failedID string
}

func (f *buildkitFollower) update(s *bkclient.SolveStatus) {
	for _, v := range s.Vertexes {
		id := v.Digest.String()
		if _, seen := f.names[id]; !seen && v.Started != nil {
			f.names[id] = v.Name
			f.started = append(f.started, id)
			f.emit(fmt.Sprintf("#%d %s", len(f.started), v.Name))
		}
		if v.Error != "" && f.failed == "" && !strings.Contains(v.Error, "context canceled") {
			f.failed, f.failedID = v.Name, id
		}
	}
	for _, l := range s.Logs {
		id := l.Vertex.String()
		t := f.logs[id]
		if t == nil {
			t = &tail{n: 30}
			f.logs[id] = t
		}
		for _, line := range strings.Split(strings.TrimRight(string(l.Data), "\n"), "\n") {
			t.add(line, l.Stream == 2)
			f.emit("  " + line)
		}
	}
}

func (f *buildkitFollower) emit(line string) {
	if f.progress != nil {
		f.progress(Progress{Phase: "build", Step: line})
	}
}

func (f *buildkitFollower) failedTail() []string {
	if t := f.logs[f.failedID]; t != nil {
		return t.lines
	}
	return nil
}
