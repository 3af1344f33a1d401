package runner

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// podmanVersion is what Podman 4.3.1's service answers to GET /version (Debian 12).
var podmanVersion = client.ServerVersionResult{Platform: client.PlatformInfo{Name: "linux/amd64/debian-12"}, Version: "4.3.1", APIVersion: "1.41",
	Os: "linux", Arch: "amd64", Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}, {Name: "Conmon", Version: "conmon version 2.1.6"}}}

// answering is a dialer to a unix socket h serves.
func answering(t *testing.T, h http.HandlerFunc) func(context.Context) (net.Conn, error) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "e.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
}

// libpodAnswering is a dialer to a Podman's own API that says whether it runs rootless.
func libpodAnswering(t *testing.T, rootless bool) func(context.Context) (net.Conn, error) {
	return answering(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/libpod/info") {
			http.NotFound(w, r)
			return
		}
		rl := "false"
		if rootless {
			rl = "true"
		}
		_, _ = w.Write([]byte(`{"host":{"security":{"rootless":` + rl + `}}}`))
	})
}

// dialerOf is a fake engine's dialer: d, or one that cannot reach anything.
func dialerOf(d func(context.Context) (net.Conn, error)) func(context.Context) (net.Conn, error) {
	if d != nil {
		return d
	}
	return func(context.Context) (net.Conn, error) { return nil, errors.New("no engine API here") }
}

// A run says which engine answered: in the log, job.json and node.json.
func TestRunSaysWhichEngineAnswered(t *testing.T) {
	eng := &runEngine{version: podmanVersion, askKind: image.KindPodman, libpod: libpodAnswering(t, false)}
	r := runLocal(t, eng, nil)
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if !strings.Contains(r.log, "msg=engine ") || !strings.Contains(r.log, ` kind=podman name="Podman Engine" version=4.3.1 api=1.41 rootless=false address=`) {
		t.Errorf("the log does not say which engine answered:\n%s", r.log)
	}
	j, err := jobdir.ReadJob(filepath.Join(filepath.Dir(filepath.Dir(r.res.NodeDir)), jobdir.JobFile))
	if err != nil {
		t.Fatal(err)
	}
	if j.Engine == nil || j.Engine.Kind != image.KindPodman || j.Engine.Name != "Podman Engine" || j.Engine.Version != "4.3.1" {
		t.Errorf("job.json engine = %+v, want Podman Engine 4.3.1", j.Engine)
	}
	rec, err := jobdir.ReadNodeRecord(&safefile.Reader{}, filepath.Join(r.res.NodeDir, jobdir.NodeRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	// Podman's Platform.Name is its OS, not its name.
	if rec.Engine.Kind != image.KindPodman || rec.Engine.Name != "Podman Engine" {
		t.Errorf("node.json engine = %+v, want kind podman, name Podman Engine", rec.Engine)
	}
}

// An engine of another kind than the run asks for (DOCKER_HOST names Docker) is refused
// before any container, as bad input that names both.
func TestRunRefusesAnotherEngineKind(t *testing.T) {
	eng := &runEngine{version: client.ServerVersionResult{Version: "20.10.24", APIVersion: "1.41",
		Components: []system.ComponentVersion{{Name: "Engine", Version: "20.10.24"}}}, askKind: image.KindPodman}
	r := runLocal(t, eng, nil)
	var me *image.KindMismatchError
	if !errors.As(r.err, &me) || exitcode.Of(r.err) != exitcode.Invalid {
		t.Fatalf("Run: %v, want a *KindMismatchError (exit 4)", r.err)
	}
	if c := eng.called(); strings.Contains(c, "create") {
		t.Errorf("a container was created on the wrong engine: %s", c)
	}
	if r.st == nil || r.st.ExitCode != exitcode.Invalid || !strings.Contains(r.st.Error, "Docker Engine 20.10.24") {
		t.Errorf("status.json: %+v; want exit 4 naming the engine", r.st)
	}
}

// A Podman that cannot say whether it runs rootless is refused where Podman was asked for
// (exit 4, before any container), and warned about where any engine will do.
func TestRunPodmanRootlessUnknown(t *testing.T) {
	eng := &runEngine{version: podmanVersion, askKind: image.KindPodman}
	r := runLocal(t, eng, nil)
	var re *image.RootlessUnknownError
	if !errors.As(r.err, &re) || exitcode.Of(r.err) != exitcode.Invalid {
		t.Fatalf("Run: %v, want a *image.RootlessUnknownError (exit 4)", r.err)
	}
	if c := eng.called(); strings.Contains(c, "create") {
		t.Errorf("a container was created: %s", c)
	}
	eng = &runEngine{version: podmanVersion}
	r = runLocal(t, eng, nil)
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if !strings.Contains(r.log, `level=WARN msg="the engine cannot say whether it runs rootless: taken as rootful"`) || !strings.Contains(r.log, "no engine API here") {
		t.Errorf("the log does not warn that rootless is not known:\n%s", r.log)
	}
}

// pingAnswering is a dialer to an engine whose ping answers with headers (and nothing else).
func pingAnswering(t *testing.T, headers map[string]string) func(context.Context) (net.Conn, error) {
	return answering(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/_ping") {
			http.NotFound(w, r)
			return
		}
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		_, _ = w.Write([]byte("OK"))
	})
}

// A Docker engine is told by its ping before any container, and said whole (its platform's
// name, from /version) beside the critical path: in the log, job.json and node.json, from
// one /version for the identity and the node record together.
func TestRunSaysDockerFromItsPingAndOneVersion(t *testing.T) {
	eng := &runEngine{version: client.ServerVersionResult{Platform: client.PlatformInfo{Name: "Docker Engine - Community"}, Version: "28.3.0",
		APIVersion: "1.51", Os: "linux", Arch: "amd64", Components: []system.ComponentVersion{{Name: "Engine", Version: "28.3.0"}}},
		libpod: pingAnswering(t, map[string]string{"Api-Version": "1.51", "Server": "Docker/28.3.0 (linux)"})}
	r := runLocal(t, eng, nil)
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if !strings.Contains(r.log, ` kind=docker name="Docker Engine - Community" version=28.3.0 api=1.51 rootless=false address=`) {
		t.Errorf("the log does not say the engine whole:\n%s", r.log)
	}
	j, err := jobdir.ReadJob(filepath.Join(filepath.Dir(filepath.Dir(r.res.NodeDir)), jobdir.JobFile))
	if err != nil {
		t.Fatal(err)
	}
	if j.Engine == nil || j.Engine.Name != "Docker Engine - Community" || j.Engine.Version != "28.3.0" || len(j.Images) > 1 || j.Image.ID == "" {
		t.Errorf("job.json: engine %+v, image %+v", j.Engine, j.Image)
	}
	rec, err := jobdir.ReadNodeRecord(&safefile.Reader{}, filepath.Join(r.res.NodeDir, jobdir.NodeRecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Engine.Name != "Docker Engine - Community" || len(rec.Images) != 1 {
		t.Errorf("node.json: engine %+v, images %+v", rec.Engine, rec.Images)
	}
	if n := strings.Count(eng.called(), "version"); n != 1 {
		t.Errorf("the engine was asked its version %d times, want once: %s", n, eng.called())
	}
}

// The image's USER is read once for the job, not once for each trial's container: an
// experiment of six trials inspects its image three times in all (the image phase, the
// USER, node.json); it was eight.
func TestTrialsInspectTheImageOnce(t *testing.T) {
	eng := &runEngine{imageUser: "bench"}
	r := runNodeOf(t, eng, trialsBody, map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "j1"}, t.TempDir(), nil)
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	if n := strings.Count(eng.called(), "inspect-image"); n != 3 {
		t.Errorf("the image was inspected %d times, want 3: %s", n, eng.called())
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if len(eng.hosts) != 6 {
		t.Fatalf("%d containers, want 6 trials", len(eng.hosts))
	}
}
