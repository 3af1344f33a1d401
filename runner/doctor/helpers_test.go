package doctor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/scheduler"
	"github.com/benchctl/benchctl/scheduler/local"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

// nodeOf is the node context of an environment as benchctl's commands read it (Slurm, then
// local), which must succeed: the tests hand it to Run as cmd does.
func nodeOf(t testing.TB, lookup scheduler.Lookup) runner.Node {
	t.Helper()
	n, err := scheduler.DetectNode(lookup, slurm.Scheduler{}, local.Scheduler{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// libpodAnswering is a dialer to a Podman's own API that says whether it runs rootless.
func libpodAnswering(t *testing.T, rootless bool) func(context.Context) (net.Conn, error) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "p.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/libpod/info") {
			http.NotFound(w, r)
			return
		}
		rl := "false"
		if rootless {
			rl = "true"
		}
		_, _ = w.Write([]byte(`{"host":{"security":{"rootless":` + rl + `}}}`))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
}

// dialerOf is a fake engine's dialer: d, or one that cannot reach anything.
func dialerOf(d func(context.Context) (net.Conn, error)) func(context.Context) (net.Conn, error) {
	if d != nil {
		return d
	}
	return func(context.Context) (net.Conn, error) { return nil, errors.New("no engine API here") }
}
