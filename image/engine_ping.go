package image

import (
	"context"

	"github.com/benchctl/benchctl/internal/enginekind"
)

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
	pid, h, err := enginekind.Ping(ctx, d.Dialer())
	if err == nil {
		var kind, name, version, api string
		if kind, name, version, api, ok = enginekind.OfPing(h); ok {
			id = Identity{Kind: kind, Name: name, Version: version, APIVersion: api}
		}
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
