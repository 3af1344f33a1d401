package enginekind

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// pingLimit bounds what is read of the engine's answer to HEAD /_ping (its status line and
// headers: a few hundred bytes from Docker and Podman).
const pingLimit = 64 << 10

// maxPingVersion bounds a version read from a ping's headers: a longer one, or one with
// characters a version does not have, is not taken.
const maxPingVersion = 128

// Ping sends HEAD /_ping on a connection of its own and returns the answer's headers and the
// connection's peer process. Bounded: 10 s, and pingLimit bytes read.
func Ping(ctx context.Context, dial func(context.Context) (net.Conn, error)) (pid int, h http.Header, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := dial(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("HEAD /_ping: %w", err)
	}
	defer conn.Close()
	pid = PeerPID(conn)
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://engine/_ping", nil)
	if err != nil {
		return 0, nil, err
	}
	if err := req.Write(conn); err != nil {
		return 0, nil, fmt.Errorf("HEAD /_ping: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.LimitReader(conn, pingLimit)), req)
	if err != nil {
		return 0, nil, fmt.Errorf("HEAD /_ping: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("HEAD /_ping: %s", resp.Status)
	}
	return pid, resp.Header, nil
}

// OfPing reads which engine answered a ping (Ping): Podman's Libpod-Api-Version (its
// version) or Server "Libpod/<version>", Docker's Server "Docker/<version> (<os>)"; and the
// API version, Api-Version. ok is false when the headers name neither, or a version that is
// not one.
func OfPing(h http.Header) (kind, name, version, api string, ok bool) {
	api = h.Get("Api-Version")
	if !pingVersion(api) {
		api = ""
	}
	server := h.Get("Server")
	if v := h.Get("Libpod-Api-Version"); v != "" || strings.HasPrefix(server, "Libpod/") {
		if v == "" {
			v, _, _ = strings.Cut(strings.TrimPrefix(server, "Libpod/"), " ")
		}
		if !pingVersion(v) {
			return "", "", "", "", false
		}
		return Podman, "Podman Engine", v, api, true
	}
	rest, found := strings.CutPrefix(server, "Docker/")
	if !found {
		return "", "", "", "", false
	}
	v, _, _ := strings.Cut(rest, " ")
	if !pingVersion(v) {
		return "", "", "", "", false
	}
	return Docker, "Docker Engine", v, api, true
}

// pingVersion says whether v looks like a version: 1-128 characters of letters, digits and
// . + - _ ~ (Debian's "20.10.24+dfsg1", "5.0.0-rc1", "28.3.0").
func pingVersion(v string) bool {
	if v == "" || len(v) > maxPingVersion {
		return false
	}
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', strings.ContainsRune(".+-_~", c):
		default:
			return false
		}
	}
	return true
}
