package runner

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/image"
)

// A rootless Podman engine maps a container user other than root to a subordinate id:
// keep-id maps the host user to it instead. Root, other engines, and names benchctl cannot
// turn into a uid get no mode (a name gets a hint saying what to do).
func TestKeepIDMode(t *testing.T) {
	tests := []struct {
		id         image.Identity
		user, want string
		hint       string
	}{
		{podmanRootless, "1000", "keep-id:uid=1000", ""},
		{podmanRootless, "1000:1000", "keep-id:uid=1000,gid=1000", ""},
		{podmanRootless, "65534:0", "keep-id:uid=65534,gid=0", ""},
		{podmanRootless, "1000:video", "keep-id:uid=1000", `group "video" is a name`},
		{podmanRootless, "bench", "", `user "bench" is a name`},
		{podmanRootless, "bench:1000", "", `user "bench:1000" is a name`},
		{podmanRootless, "4294967295", "", "is a name"}, // (uid_t)-1 is no uid
		{podmanRootless, "99999999999", "", "is a name"},
		{podmanRootless, "-1", "", "is a name"},
		{podmanRootless, "", "", ""},
		{podmanRootless, "root", "", ""},
		{podmanRootless, "0", "", ""},
		{podmanRootless, "0:1000", "", ""},
		{podmanRootful, "1000:1000", "", ""},
		{dockerEngine, "1000:1000", "", ""},
		{image.Identity{Kind: image.KindDocker, Rootless: true}, "1000", "", ""}, // rootless Docker has no keep-id
	}
	for _, tt := range tests {
		mode, hint := keepIDMode(tt.id, tt.user)
		if mode != tt.want || (tt.hint == "") != (hint == "") || !strings.Contains(hint, tt.hint) {
			t.Errorf("keepIDMode(%s, %q) = %q, %q; want %q, a hint with %q", tt.id.Kind, tt.user, mode, hint, tt.want, tt.hint)
		}
		if hint != "" && !strings.Contains(hint, "container.user") {
			t.Errorf("the hint %q does not say what to set", hint)
		}
	}
	s := Spec{Name: "c", Image: "i", Command: []string{"/b"}, UserNS: "keep-id:uid=1000,gid=1000"}
	if _, hc := s.Config(); hc.UsernsMode != "keep-id:uid=1000,gid=1000" {
		t.Errorf("HostConfig.UsernsMode = %q", hc.UsernsMode)
	}
	if cmd := s.DockerRun(); !strings.Contains(cmd, "--userns keep-id:uid=1000,gid=1000") {
		t.Errorf("docker run line lacks --userns: %s", cmd)
	}
	if _, hc := (Spec{Name: "c", Image: "i", Command: []string{"/b"}}).Config(); hc.UsernsMode != "" {
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
