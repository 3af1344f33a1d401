package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// pingTimeout bounds the ping of each Podman socket benchctl finds by itself: a service
// that does not answer in it is taken as not there.
const pingTimeout = 3 * time.Second

// errNoSocket is a place with nothing at it.
var errNoSocket = errors.New("no socket")

// SocketTrustError is a Podman socket that benchctl found by itself but will not use:
// someone other than the user (or root, for the rootful socket) made it, or could have
// put it there or replaced it. The engine at a socket receives the containers'
// environment, secrets included, and registry credentials.
type SocketTrustError struct {
	Path     string // where benchctl looked
	Resolved string // Path with its links resolved ("" when the same)
	Reason   string
}

func (e *SocketTrustError) Error() string {
	link := ""
	if e.Resolved != "" && e.Resolved != e.Path {
		link = " (a link to " + e.Resolved + ")"
	}
	return fmt.Sprintf("refusing the Podman socket %s%s: %s, so another user could have put it there and would receive the containers' environment (secrets) and registry credentials; use a runtime folder that only you can write (XDG_RUNTIME_DIR, normally /run/user/$UID, mode 0700), or set DOCKER_HOST to a socket you trust (DOCKER_HOST is used as given)",
		e.Path, link, e.Reason)
}

// InvalidInput marks the refusal as a bad environment (exit 4).
func (e *SocketTrustError) InvalidInput() bool { return true }

// ProbeSocket is how EngineAddress checks a Podman socket it found by itself (path, which
// must belong to owner: the user's uid for a rootless socket, 0 for the rootful one; uid is
// the caller's). It returns the socket's path with links resolved (the path to connect to,
// so that a link swapped after the check is not followed), or errNoSocket, a
// *SocketTrustError, or why the socket does not answer Podman's ping.
//
// Trusted: after links are resolved, the socket belongs to owner, and every folder above it
// belongs to uid or root and is not writable by group or others, except a sticky folder
// such as /tmp, where others cannot remove or rename what is not theirs (the folder below it
// must then belong to uid or root, which this same rule checks).
func ProbeSocket(path string, owner, uid int) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNoSocket
	}
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	refuse := func(format string, a ...any) error {
		return &SocketTrustError{Path: path, Resolved: resolved, Reason: fmt.Sprintf(format, a...)}
	}
	st, err := os.Lstat(resolved)
	if err != nil {
		return "", err
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return "", errNotSocket
	}
	if o := ownerOf(st); o != owner {
		return "", refuse("it belongs to uid %d, not to %s", o, whose(owner, uid))
	}
	for d := filepath.Dir(resolved); ; d = filepath.Dir(d) {
		st, err := os.Lstat(d)
		if err != nil {
			return "", err
		}
		if o := ownerOf(st); o != uid && o != 0 {
			return "", refuse("the folder %s belongs to uid %d, not to you (uid %d) or root", d, o, uid)
		}
		if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
			return "", refuse("the folder %s is writable by other users (mode %04o)", d, st.Mode().Perm())
		}
		if d == "/" || d == "." {
			break
		}
	}
	if err := pingSocket(resolved, pingTimeout); err != nil {
		return "", err
	}
	return resolved, nil
}

// errNotSocket is a file that is not a socket where one was looked for.
var errNotSocket = errors.New("not a socket")

func whose(owner, uid int) string {
	if owner == 0 {
		return "root (the rootful engine's socket)"
	}
	if owner == uid {
		return fmt.Sprintf("you (uid %d)", uid)
	}
	return fmt.Sprintf("uid %d", owner)
}

func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// pingSocket asks the engine at the unix socket path for /_ping, within timeout.
func pingSocket(path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/_ping", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("does not answer: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("does not answer: /_ping: %s", resp.Status)
	}
	return nil
}
