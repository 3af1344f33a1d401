package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// The keep-id mode KeepIDMode gives reaches the engine (HostConfig.UsernsMode) and the docker
// run line; no mode asked, none set.
func TestKeepIDModeReachesTheEngine(t *testing.T) {
	s := Spec{Name: "c", Image: "i", Command: []string{"/b"}, UserNS: "keep-id:uid=1000,gid=1000"}
	if _, hc := configOf(s); hc.UsernsMode != "keep-id:uid=1000,gid=1000" {
		t.Errorf("HostConfig.UsernsMode = %q", hc.UsernsMode)
	}
	if cmd := s.DockerRun(); !strings.Contains(cmd, "--userns keep-id:uid=1000,gid=1000") {
		t.Errorf("docker run line lacks --userns: %s", cmd)
	}
	if _, hc := configOf(Spec{Name: "c", Image: "i", Command: []string{"/b"}}); hc.UsernsMode != "" {
		t.Errorf("no mode asked, got %q", hc.UsernsMode)
	}
}

// podmanInfoEngine is runEngine answering as a rootless Podman 4.3.1 service, with
// Podman's own /libpod/info served through its Dialer (as image.Identify asks it).
type podmanInfoEngine struct {
	*runEngine
	addr string
}

func (e podmanInfoEngine) Dialer() func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", e.addr)
	}
}

// On rootless Podman, a run of an image whose USER is 1000:1000 creates its container with
// keep-id for that user, and its results folder is the user's own 0755 one (not 01777, as a
// container user other than this one needs elsewhere).
func TestRunRootlessPodmanKeepsID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/libpod/info") {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"host":{"security":{"rootless":true}}}`))
	}))
	defer srv.Close()
	for _, tt := range []struct {
		user, mode string
		perm       os.FileMode
	}{
		{"1000:1000", "keep-id:uid=1000,gid=1000", 0o755},
		{"", "", 0o755},
		{"bench", "", os.ModeSticky | 0o777},
	} {
		inner := &runEngine{version: podmanVersion, imageUser: tt.user}
		eng := podmanInfoEngine{inner, strings.TrimPrefix(srv.URL, "http://")}
		r := runFakeWith(t, eng, inner)
		if r.err != nil {
			t.Fatalf("%q: Run: %v", tt.user, r.err)
		}
		if len(inner.hosts) != 1 || inner.hosts[0] == nil {
			t.Fatalf("%q: created %d containers", tt.user, len(inner.hosts))
		}
		if got := string(inner.hosts[0].UsernsMode); got != tt.mode {
			t.Errorf("%q: UsernsMode %q, want %q", tt.user, got, tt.mode)
		}
		st, err := os.Stat(filepath.Join(r.res.NodeDir, "results", "b"))
		if err != nil || st.Mode()&(os.ModePerm|os.ModeSticky) != tt.perm {
			t.Errorf("%q: results folder %v %v, want %v", tt.user, st.Mode(), err, tt.perm)
		}
		if tt.user == "bench" && !strings.Contains(r.log, `user \"bench\" is a name`) {
			t.Errorf("no hint for a named user in the log:\n%s", r.log)
		}
	}
}

// podmanFilesEngine is podmanInfoEngine whose image has an /etc/passwd naming bench, read
// through CopyFromContainer; it counts the reads.
type podmanFilesEngine struct {
	podmanInfoEngine
	copies *int
}

func (e podmanFilesEngine) CopyFromContainer(_ context.Context, _ string, o client.CopyFromContainerOptions) (client.CopyFromContainerResult, error) {
	*e.copies++
	body := map[string]string{"/etc/passwd": "bench:x:1000:1001::/:/bin/sh\n", "/etc/group": "bench:x:1001:\n"}[o.SourcePath]
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: filepath.Base(o.SourcePath), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	return client.CopyFromContainerResult{Content: io.NopCloser(&buf)}, nil
}

// An experiment's trials on rootless Podman with a named USER: the image's users are read
// once (one helper container, removed), every trial's container gets keep-id for bench's
// numbers.
func TestRunRootlessPodmanReadsTheImageUsersOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"host":{"security":{"rootless":true}}}`))
	}))
	defer srv.Close()
	inner := &runEngine{version: podmanVersion, imageUser: "bench"}
	copies := 0
	eng := podmanFilesEngine{podmanInfoEngine{inner, strings.TrimPrefix(srv.URL, "http://")}, &copies}
	r := runNodeOn(t, eng, inner, trialsBody, map[string]string{"NODE_RANK": "0", "NNODES": "1", "BENCHCTL_JOB_ID": "j1"}, t.TempDir(), nil)
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	helpers, trials := 0, 0
	for _, hc := range inner.hosts {
		switch {
		case hc.NetworkMode == "none":
			helpers++
		case hc.UsernsMode == "keep-id:uid=1000,gid=1001":
			trials++
		default:
			t.Errorf("a container with userns %q", hc.UsernsMode)
		}
	}
	if helpers != 1 || copies != 2 || trials != 6 {
		t.Errorf("%d helper containers, %d files read, %d trials with keep-id; want 1, 2 (passwd, group), 6", helpers, copies, trials)
	}
}
