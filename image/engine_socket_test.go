package image

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sockUID is the user the Podman discovery tests act as: this process's, or a made-up one
// (with the test's folders given to it) when the tests run as root, since root's discovery
// looks at the rootful socket only.
func sockUID(t *testing.T) int {
	t.Helper()
	if os.Getuid() == 0 {
		return 4242
	}
	return os.Getuid()
}

// chownTo gives paths to uid (as root; otherwise they are this process's already).
func chownTo(t *testing.T, uid int, paths ...string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
}

// listenPodman listens at path and answers /_ping as Podman's service does.
func listenPodman(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			_, _ = w.Write([]byte("OK"))
			return
		}
		http.NotFound(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// deadSocket leaves a socket file that nothing listens on (a service killed with SIGKILL).
func deadSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l.Close()
}

// xdgTree makes an XDG_RUNTIME_DIR (mode xdgMode) with podman/ in it, both the user's.
func xdgTree(t *testing.T, uid int, xdgMode os.FileMode) (xdg, sock string) {
	t.Helper()
	xdg = filepath.Join(t.TempDir(), "xdg")
	if err := os.MkdirAll(filepath.Join(xdg, "podman"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(xdg, xdgMode); err != nil {
		t.Fatal(err)
	}
	chownTo(t, uid, xdg, filepath.Join(xdg, "podman"))
	return xdg, filepath.Join(xdg, "podman", "podman.sock")
}

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The user's socket that answers, in folders only the user can write, is found.
func TestEngineAddressTrustedSocket(t *testing.T) {
	uid := sockUID(t)
	xdg, sock := xdgTree(t, uid, 0o700)
	listenPodman(t, sock)
	chownTo(t, uid, sock)
	got, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid})
	if err != nil || got != "unix://"+sock {
		t.Fatalf("EngineAddress = %q, %v; want unix://%s", got, err, sock)
	}
}

// A socket another user could have planted is refused, naming the path and why: its
// environment and registry credentials would go to whoever listens there.
func TestEngineAddressRefusesPlantedSocket(t *testing.T) {
	uid := sockUID(t)
	t.Run("folder writable by others", func(t *testing.T) {
		xdg, sock := xdgTree(t, uid, 0o777) // XDG_RUNTIME_DIR=/tmp/xdg made by someone with umask 0
		listenPodman(t, sock)
		chownTo(t, uid, sock)
		_, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid})
		wantTrustError(t, err, sock, xdg+" is writable by other users")
	})
	t.Run("socket of another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to give a socket to another user")
		}
		xdg, sock := xdgTree(t, uid, 0o700)
		listenPodman(t, sock)
		chownTo(t, uid+1, sock)
		_, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid})
		wantTrustError(t, err, sock, "belongs to uid 4243, not to you (uid 4242)")
	})
	t.Run("folder of another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to give a folder to another user")
		}
		xdg, sock := xdgTree(t, uid, 0o700)
		chownTo(t, uid+1, xdg) // /tmp/xdg planted by uid 4243, with the user's socket in it
		listenPodman(t, sock)
		chownTo(t, uid, sock)
		_, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid})
		wantTrustError(t, err, sock, xdg+" belongs to uid 4243")
	})
	t.Run("link into a folder writable by others", func(t *testing.T) {
		xdg, link := xdgTree(t, uid, 0o700)
		open := filepath.Join(t.TempDir(), "open")
		if err := os.Mkdir(open, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(open, 0o777); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(open, "p.sock")
		listenPodman(t, sock)
		chownTo(t, uid, sock)
		if err := os.Symlink(sock, link); err != nil {
			t.Fatal(err)
		}
		_, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid})
		wantTrustError(t, err, link, "(a link to "+sock+")")
	})
	t.Run("not a socket", func(t *testing.T) {
		xdg, sock := xdgTree(t, uid, 0o700)
		if err := os.WriteFile(sock, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		chownTo(t, uid, sock)
		_, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid,
			Probe: func(p string, owner int) (string, error) {
				if p == sock {
					return ProbeSocket(p, owner, uid)
				}
				return "", errNoSocket
			}})
		var ne *NoEngineError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), sock+" (not a socket)") {
			t.Fatalf("err = %v, want a *NoEngineError saying %s is not a socket", err, sock)
		}
	})
}

func wantTrustError(t *testing.T, err error, path string, why string) {
	t.Helper()
	var te *SocketTrustError
	if !errors.As(err, &te) || !te.InvalidInput() {
		t.Fatalf("err = %v, want a *SocketTrustError", err)
	}
	for _, s := range []string{"refusing the Podman socket " + path, why, "DOCKER_HOST"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

// A socket file left by a killed service is not an engine: the next place is tried, and
// the error says it did not answer.
func TestEngineAddressSkipsDeadSocket(t *testing.T) {
	uid := sockUID(t)
	xdg, sock := xdgTree(t, uid, 0o700)
	deadSocket(t, sock)
	chownTo(t, uid, sock)
	_, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid,
		Probe: func(p string, owner int) (string, error) {
			if p == sock {
				return ProbeSocket(p, owner, uid)
			}
			return "", errNoSocket
		}})
	var ne *NoEngineError
	if !errors.As(err, &ne) {
		t.Fatalf("err = %v, want a *NoEngineError", err)
	}
	for _, s := range []string{sock + " (does not answer:", "/run/podman/podman.sock (no socket)"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	// The next that answers is taken.
	got, err := EngineAddress(KindPodman, AddressOptions{Lookup: envOf("XDG_RUNTIME_DIR", xdg), UID: uid,
		Probe: func(p string, owner int) (string, error) {
			if p == sock {
				return ProbeSocket(p, owner, uid)
			}
			if p == "/run/podman/podman.sock" && owner == 0 {
				return p, nil
			}
			return "", errNoSocket
		}})
	if err != nil || got != "unix:///run/podman/podman.sock" {
		t.Fatalf("EngineAddress = %q, %v; want the rootful socket", got, err)
	}
}
