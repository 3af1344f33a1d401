package image

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
// characters a version does not have, is not taken (the slow way asks /version).
const maxPingVersion = 128

// IdentifyQuick identifies an engine from its answer to HEAD /_ping, the cheapest call an
// engine has, where Identify asks /version and /info (Docker runs its runtimes and init to
// answer each: 10-25 ms apiece on the testbed; Podman takes 0.4-0.7 s). Docker names itself
// and its version in the Server header ("Docker/20.10.24+dfsg1 (linux)"), Podman in
// Libpod-Api-Version, and both their API version in Api-Version; the connection's peer
// (SO_PEERCRED) is the engine's process, as Identify finds it.
//
// Podman is also asked whether it runs rootless (its own /libpod/info, as Identify does):
// its identity is then complete. Docker's is not: its Name is the generic "Docker Engine"
// and Rootless is not asked (only its /info says), so complete is false and the caller
// completes it from the engine's facts (CompleteIdentity) off its critical path; nothing
// a Docker container is given before then depends on either. An engine whose ping names
// neither, a ping that fails (Identify then says why, naming the engine's address), or a
// client that cannot dial the engine itself (a test's fake), is identified the slow way
// (Identify), complete.
func IdentifyQuick(ctx context.Context, eng Versioner) (id Identity, complete bool, err error) {
	d, ok := eng.(dialer)
	if !ok {
		id, err = Identify(ctx, eng)
		return id, true, err
	}
	pid, h, err := ping(ctx, d.Dialer())
	if err == nil {
		id, ok = identityOfPing(h)
	}
	if err != nil || !ok { // no answer, one that is not a ping's, or one that names no engine
		id, err = Identify(ctx, eng)
		return id, true, err
	}
	id.Host, id.PID = EngineHostOf(eng), pid
	if id.Kind != KindPodman {
		return id, false, nil
	}
	rootless, err := podmanRootless(ctx, d.Dialer())
	if err != nil {
		id.RootlessUnknown = err.Error()
	}
	id.Rootless = rootless
	return id, true, nil
}

// CompleteIdentity is a Docker identity IdentifyQuick made, completed by what the engine's
// /version and /info said (kind and name from enginekind.Of, the rootless security
// option; infoProblem: /info did not answer, and why). A complete identity, or answers of
// another kind of engine than the ping's, change nothing but what the answers add.
func CompleteIdentity(quick Identity, kind, name, version, apiVersion string, rootless bool, infoProblem string) Identity {
	if quick.Kind != KindDocker || kind != KindDocker {
		return quick
	}
	id := quick
	id.Name = name
	if version != "" {
		id.Version = version
	}
	if apiVersion != "" {
		id.APIVersion = apiVersion
	}
	id.Rootless = rootless
	if infoProblem != "" {
		id.RootlessUnknown = "/info: " + infoProblem
	}
	return id
}

// ping sends HEAD /_ping on a connection of its own and returns the answer's headers and the
// connection's peer process. Bounded: 10 s, and pingLimit bytes read.
func ping(ctx context.Context, dial func(context.Context) (net.Conn, error)) (pid int, h http.Header, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := dial(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("HEAD /_ping: %w", err)
	}
	defer conn.Close()
	pid = connPeerPID(conn)
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

// identityOfPing reads which engine answered a ping: Podman's Libpod-Api-Version (its
// version) or Server "Libpod/<version>", Docker's Server "Docker/<version> (<os>)". ok is
// false when the headers name neither, or a version that is not one.
func identityOfPing(h http.Header) (Identity, bool) {
	api := h.Get("Api-Version")
	if !pingVersion(api) {
		api = ""
	}
	server := h.Get("Server")
	if v := h.Get("Libpod-Api-Version"); v != "" || strings.HasPrefix(server, "Libpod/") {
		if v == "" {
			v, _, _ = strings.Cut(strings.TrimPrefix(server, "Libpod/"), " ")
		}
		if !pingVersion(v) {
			return Identity{}, false
		}
		return Identity{Kind: KindPodman, Name: "Podman Engine", Version: v, APIVersion: api}, true
	}
	rest, ok := strings.CutPrefix(server, "Docker/")
	if !ok {
		return Identity{}, false
	}
	v, _, _ := strings.Cut(rest, " ")
	if !pingVersion(v) {
		return Identity{}, false
	}
	return Identity{Kind: KindDocker, Name: "Docker Engine", Version: v, APIVersion: api}, true
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
