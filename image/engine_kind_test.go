package image

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// Recorded answers of GET /version: Podman 4.3.1's service (Debian 12) and Docker 20.10.24
// (Debian's docker.io) and Docker CE.
const (
	podmanVersion   = `{"Platform":{"Name":"linux/amd64/debian-12"},"Components":[{"Name":"Podman Engine","Version":"4.3.1","Details":{"APIVersion":"4.3.1","MinAPIVersion":"4.0.0","Os":"linux"}},{"Name":"Conmon","Version":"conmon version 2.1.6, commit: unknown"},{"Name":"OCI Runtime (runc)","Version":"runc version 1.1.5+ds1"}],"Version":"4.3.1","ApiVersion":"1.41","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}`
	dockerVersion   = `{"Platform":{"Name":""},"Components":[{"Name":"Engine","Version":"20.10.24+dfsg1"},{"Name":"containerd","Version":"1.6.20"},{"Name":"runc","Version":"1.1.5"},{"Name":"docker-init","Version":"0.19.0"}],"Version":"20.10.24+dfsg1","ApiVersion":"1.41","MinAPIVersion":"1.12","Os":"linux","Arch":"amd64"}`
	dockerCEVersion = `{"Platform":{"Name":"Docker Engine - Community"},"Components":[{"Name":"Engine","Version":"28.3.0"}],"Version":"28.3.0","ApiVersion":"1.51","MinAPIVersion":"1.24","Os":"linux","Arch":"amd64"}`
)

// fakeEngineServer answers /version with version, /info with security options, and Podman's
// /libpod/info with rootless (404 unless podman).
func fakeEngineServer(t *testing.T, version string, securityOptions []string, podmanRootless *bool) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Api-Version", "1.41")
		p := r.URL.Path
		switch {
		case p == "/_ping" || strings.HasSuffix(p, "/_ping"):
			_, _ = w.Write([]byte("OK"))
		case strings.HasSuffix(p, "/libpod/info"):
			if podmanRootless == nil {
				http.NotFound(w, r)
				return
			}
			rl := "false"
			if *podmanRootless {
				rl = "true"
			}
			_, _ = w.Write([]byte(`{"host":{"security":{"rootless":` + rl + `}},"store":{}}`))
		case strings.HasSuffix(p, "/version"):
			_, _ = w.Write([]byte(version))
		case strings.HasSuffix(p, "/info"):
			opts := `[]`
			if len(securityOptions) > 0 {
				opts = `["` + strings.Join(securityOptions, `","`) + `"]`
			}
			_, _ = w.Write([]byte(`{"ID":"x","Name":"n1","SecurityOptions":` + opts + `}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(client.WithHost("tcp://" + strings.TrimPrefix(srv.URL, "http://")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestIdentify(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name      string
		version   string
		secOpts   []string
		rootless  *bool
		want      Identity
		wantTitle string
	}{
		{"podman rootful", podmanVersion, []string{"name=seccomp,profile=default"}, &no,
			Identity{Kind: KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41"}, "Podman Engine 4.3.1 (API 1.41, rootful)"},
		// Podman 4.3's compatible /info does not name rootless: its own API does.
		{"podman rootless", podmanVersion, []string{"name=seccomp,profile=default"}, &yes,
			Identity{Kind: KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41", Rootless: true}, "Podman Engine 4.3.1 (API 1.41, rootless)"},
		{"podman without its own API", podmanVersion, nil, nil,
			Identity{Kind: KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41", RootlessUnknown: "GET /libpod/info: 404 Not Found"},
			"Podman Engine 4.3.1 (API 1.41, rootless not known, taken as rootful)"},
		{"docker debian", dockerVersion, []string{"name=seccomp,profile=default"}, nil,
			Identity{Kind: KindDocker, Name: "Docker Engine", Version: "20.10.24+dfsg1", APIVersion: "1.41"}, "Docker Engine 20.10.24+dfsg1 (API 1.41, rootful)"},
		{"docker rootless", dockerCEVersion, []string{"name=seccomp,profile=default", "name=rootless"}, nil,
			Identity{Kind: KindDocker, Name: "Docker Engine - Community", Version: "28.3.0", APIVersion: "1.51", Rootless: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeEngineServer(t, tt.version, tt.secOpts, tt.rootless)
			got, err := Identify(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Host = c.DaemonHost()
			if got != tt.want {
				t.Errorf("Identify = %+v, want %+v", got, tt.want)
			}
			if tt.wantTitle != "" && got.String() != tt.wantTitle {
				t.Errorf("String = %q, want %q", got.String(), tt.wantTitle)
			}
		})
	}
}

func TestIdentifyUnreachable(t *testing.T) {
	c, err := client.New(client.WithHost("unix:///nonexistent/benchctl-test.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Identify(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/benchctl-test.sock") {
		t.Fatalf("err = %v, want one naming the socket", err)
	}
}

func TestCheckKind(t *testing.T) {
	docker := Identity{Kind: KindDocker, Name: "Docker Engine", Version: "20.10.24", APIVersion: "1.41", Host: "unix:///var/tmp/bctb/n1/docker.sock"}
	if err := CheckKind(KindAny, docker); err != nil {
		t.Fatal(err)
	}
	if err := CheckKind(KindDocker, docker); err != nil {
		t.Fatal(err)
	}
	err := CheckKind(KindPodman, docker)
	var me *KindMismatchError
	if !errors.As(err, &me) || !me.InvalidInput() {
		t.Fatalf("err = %v, want a *KindMismatchError", err)
	}
	for _, s := range []string{"engine podman was asked for", "unix:///var/tmp/bctb/n1/docker.sock", "Docker Engine 20.10.24", "DOCKER_HOST", "Podman socket"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

func TestEngineAddress(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	sockets := func(have ...string) func(string, int) (string, error) {
		return func(p string, _ int) (string, error) {
			for _, h := range have {
				if h == p {
					return p, nil
				}
			}
			return "", errNoSocket
		}
	}
	tests := []struct {
		name    string
		kind    string
		o       AddressOptions
		want    string
		wantErr []string
	}{
		{"DOCKER_HOST wins for podman", KindPodman, AddressOptions{Lookup: env("DOCKER_HOST", "unix:///x.sock"), UID: 1000, Probe: sockets("/run/podman/podman.sock")}, "unix:///x.sock", nil},
		{"DOCKER_HOST wins for docker", KindDocker, AddressOptions{Lookup: env("DOCKER_HOST", "tcp://h:2376"), UID: 1000, Probe: sockets()}, "tcp://h:2376", nil},
		{"docker default", KindDocker, AddressOptions{Lookup: env(), UID: 1000, Probe: sockets()}, client.DefaultDockerHost, nil},
		{"any default", KindAny, AddressOptions{Lookup: env(), UID: 1000, Probe: sockets()}, client.DefaultDockerHost, nil},
		{"rootless first", KindPodman, AddressOptions{Lookup: env(), UID: 1000, Probe: sockets("/run/user/1000/podman/podman.sock", "/run/podman/podman.sock")}, "unix:///run/user/1000/podman/podman.sock", nil},
		{"XDG_RUNTIME_DIR", KindPodman, AddressOptions{Lookup: env("XDG_RUNTIME_DIR", "/tmp/xdg"), UID: 1000, Probe: sockets("/tmp/xdg/podman/podman.sock", "/run/user/1000/podman/podman.sock")}, "unix:///tmp/xdg/podman/podman.sock", nil},
		{"rootful when no rootless", KindPodman, AddressOptions{Lookup: env("XDG_RUNTIME_DIR", "/tmp/xdg"), UID: 1000, Probe: sockets("/run/podman/podman.sock")}, "unix:///run/podman/podman.sock", nil},
		{"root: rootful only", KindPodman, AddressOptions{Lookup: env(), UID: 0, Probe: sockets("/run/user/0/podman/podman.sock", "/run/podman/podman.sock")}, "unix:///run/podman/podman.sock", nil},
		{"none", KindPodman, AddressOptions{Lookup: env("DOCKER_HOST", ""), UID: 1000, Probe: sockets()}, "",
			[]string{"no Podman engine found", "/run/user/1000/podman/podman.sock", "/run/podman/podman.sock", "systemctl --user start podman.socket", "podman system service", "DOCKER_HOST"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EngineAddress(tt.kind, tt.o)
			if len(tt.wantErr) > 0 {
				var ne *NoEngineError
				if !errors.As(err, &ne) {
					t.Fatalf("err = %v, want a *NoEngineError", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("EngineAddress = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCheckKindName(t *testing.T) {
	for _, k := range []string{"", "docker", "podman"} {
		if err := CheckKindName("--engine", k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	err := CheckKindName("--engine", "Podman ")
	if err == nil || !strings.Contains(err.Error(), `--engine "Podman " is not an engine benchctl knows (allowed: docker, podman)`) {
		t.Fatalf("err = %v", err)
	}
}

// A Podman whose own API does not answer cannot say whether it is rootless: Identify says
// why (callers warn), and where Podman was asked for that is an error, not a guess.
func TestIdentifyPodmanRootlessUnknown(t *testing.T) {
	c := fakeEngineServer(t, podmanVersion, nil, nil) // /libpod/info: 404
	id, err := Identify(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if id.Rootless || !strings.Contains(id.RootlessUnknown, "404") {
		t.Fatalf("Identify = %+v, want rootless unknown with the reason", id)
	}
	if err := CheckKind(KindAny, id); err != nil {
		t.Errorf("CheckKind(any) = %v, want nil (a warning, not an error)", err)
	}
	err = CheckKind(KindPodman, id)
	var re *RootlessUnknownError
	if !errors.As(err, &re) || !re.InvalidInput() {
		t.Fatalf("CheckKind(podman) = %v, want a *RootlessUnknownError", err)
	}
	for _, s := range []string{"cannot tell whether the Podman engine at " + c.DaemonHost() + " runs rootless", "404", "libpod/info"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}
