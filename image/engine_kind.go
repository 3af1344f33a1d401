package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/enginekind"

	"github.com/moby/moby/client"
)

// Kinds of container engine: the manifest's engine: and --engine (KindAny: whichever engine
// DOCKER_HOST, else Docker's default socket, names).
const (
	KindAny    = ""
	KindDocker = enginekind.Docker
	KindPodman = enginekind.Podman
)

// Kinds are the engine kinds a manifest or --engine may name.
var Kinds = []string{KindDocker, KindPodman}

// Identity is which engine answered: Docker or Podman, its version, and whether it runs
// rootless (its containers' root is the user who started it).
type Identity struct {
	Kind       string `json:"kind"` // KindDocker or KindPodman
	Name       string `json:"name"` // "Docker Engine", "Podman Engine"
	Version    string `json:"version"`
	APIVersion string `json:"apiVersion"`
	Rootless   bool   `json:"rootless"`
	// RootlessUnknown is why the engine could not say whether it runs rootless ("": it
	// said); Rootless is then false. Callers warn with it, and CheckKind refuses such a
	// Podman where Podman was asked for.
	RootlessUnknown string `json:"-"`
	Host            string `json:"host,omitempty"`
	// PID is the engine's process where its unix socket says (0: not known): its resource
	// limits bound its containers' where it may not raise them.
	PID int `json:"-"`
}

// String is the identity for people: "Podman Engine 4.3.1 (API 1.41, rootless)".
func (id Identity) String() string {
	mode := "rootful"
	switch {
	case id.Rootless:
		mode = "rootless"
	case id.RootlessUnknown != "":
		mode = "rootless not known, taken as rootful"
	}
	return fmt.Sprintf("%s %s (API %s, %s)", id.Name, id.Version, id.APIVersion, mode)
}

// Podman reports whether the engine is Podman's service.
func (id Identity) Podman() bool { return id.Kind == KindPodman }

// KindOf says which engine a version answer is from: Podman names a component "Podman
// Engine" (its Platform.Name is the OS, linux/amd64/debian-12); Docker names its
// component "Engine" and its platform "Docker Engine - Community" (or nothing, as Debian's
// docker.io). It returns the kind and the engine's name.
func KindOf(v client.ServerVersionResult) (kind, name string) {
	names := make([]string, len(v.Components))
	for i, c := range v.Components {
		names[i] = c.Name
	}
	return enginekind.Of(v.Platform.Name, names...)
}

// Versioner is the engine call Identify needs.
type Versioner interface {
	ServerVersion(ctx context.Context, opts client.ServerVersionOptions) (client.ServerVersionResult, error)
}

// infoer and dialer are optional: *client.Client has both. Info says whether Docker runs
// rootless (its security options name rootless); Podman's compatible info does not say,
// so Identify asks Podman's own API (/libpod/info) through the client's dialer.
type (
	infoer interface {
		Info(ctx context.Context, opts client.InfoOptions) (client.SystemInfoResult, error)
	}
	dialer interface {
		Dialer() func(context.Context) (net.Conn, error)
	}
)

// Identify asks an engine which it is. An engine that cannot say whether it is rootless is
// taken as rootful, with the reason in RootlessUnknown (Podman's own API did not answer;
// Docker's /info not answering leaves it unknown too).
func Identify(ctx context.Context, eng Versioner) (Identity, error) {
	host := EngineHostOf(eng)
	v, err := eng.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return Identity{Host: host}, engineError(host, err)
	}
	id := Identity{Version: v.Version, APIVersion: v.APIVersion, Host: host}
	id.Kind, id.Name = KindOf(v)
	if d, ok := eng.(dialer); ok {
		id.PID = peerPID(ctx, d.Dialer())
	}
	if id.Kind == KindPodman {
		d, ok := eng.(dialer)
		if !ok {
			id.RootlessUnknown = "the engine client cannot reach Podman's own API"
			return id, nil
		}
		rootless, err := podmanRootless(ctx, d.Dialer())
		if err != nil {
			id.RootlessUnknown = err.Error()
		}
		id.Rootless = rootless
		return id, nil
	}
	in, ok := eng.(infoer)
	if !ok {
		return id, nil // a test's engine: nothing to ask
	}
	info, err := in.Info(ctx, client.InfoOptions{})
	if err != nil {
		id.RootlessUnknown = "/info: " + err.Error()
		return id, nil
	}
	for _, o := range info.Info.SecurityOptions {
		if o == "name=rootless" || strings.HasPrefix(o, "name=rootless,") {
			id.Rootless = true
		}
	}
	return id, nil
}

// podmanRootless asks Podman's own API whether the service runs rootless.
func podmanRootless(ctx context.Context, dial func(context.Context) (net.Conn, error)) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/v4.0.0/libpod/info", nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("GET /libpod/info: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET /libpod/info: %s", resp.Status)
	}
	var info struct {
		Host struct {
			Security struct {
				Rootless bool `json:"rootless"`
			} `json:"security"`
		} `json:"host"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&info); err != nil {
		return false, fmt.Errorf("GET /libpod/info: %w", err)
	}
	return info.Host.Security.Rootless, nil
}

// KindMismatchError is an engine of another kind than the manifest's engine: or --engine
// asks for (DOCKER_HOST wins over finding the socket, so it may name another engine).
type KindMismatchError struct {
	Want string
	Got  Identity
}

func (e *KindMismatchError) Error() string {
	return fmt.Sprintf("engine %s was asked for (--engine, or engine: in the manifest), but the engine at %s is %s: point DOCKER_HOST at a %s socket, or unset it so that benchctl finds one, or ask for engine %s",
		e.Want, e.Got.Host, e.Got, kindTitle(e.Want), e.Got.Kind)
}

// InvalidInput marks the mismatch as bad input (exit 4).
func (e *KindMismatchError) InvalidInput() bool { return true }

// CheckKind returns a *KindMismatchError when want names a kind and the engine is another,
// and a *RootlessUnknownError when Podman is asked for and cannot say whether it runs
// rootless.
func CheckKind(want string, got Identity) error {
	if want == KindAny {
		return nil
	}
	if want != got.Kind {
		return &KindMismatchError{Want: want, Got: got}
	}
	if want == KindPodman && got.RootlessUnknown != "" {
		return &RootlessUnknownError{Got: got}
	}
	return nil
}

// RootlessUnknownError is a Podman engine, asked for by name, that cannot say whether it
// runs rootless. benchctl does not guess: the two differ in what a container may be given
// (resource limits above the user's, the GPU devices' groups, who owns the results), and
// either wrong guess fails later, or runs the benchmark other than the manifest says.
type RootlessUnknownError struct {
	Got Identity
}

func (e *RootlessUnknownError) Error() string {
	return fmt.Sprintf("cannot tell whether the Podman engine at %s runs rootless: its own API (GET /v4.0.0/libpod/info) did not say: %s; benchctl needs Podman 4 or later with its service's full API (`podman system service`, not a proxy that passes only Docker's paths), or check that the service is healthy (`podman info` as the user it runs as)",
		e.Got.Host, e.Got.RootlessUnknown)
}

// InvalidInput marks the engine as one this run cannot use (exit 4).
func (e *RootlessUnknownError) InvalidInput() bool { return true }

func kindTitle(kind string) string {
	if kind == KindPodman {
		return "Podman"
	}
	return "Docker"
}

// CheckKindName returns an error for a kind that is not one benchctl knows, naming where it
// was given.
func CheckKindName(where, kind string) error {
	switch kind {
	case KindAny, KindDocker, KindPodman:
		return nil
	}
	return fmt.Errorf("%s %q is not an engine benchctl knows (allowed: %s)", where, kind, strings.Join(Kinds, ", "))
}

// NoEngineError is a Podman engine asked for where none of its sockets answers.
type NoEngineError struct {
	Kind   string
	Looked []string // the addresses tried, in order
	Why    []string // beside each of Looked: why it was not taken ("no socket", "does not answer: …")
}

func (e *NoEngineError) Error() string {
	looked := make([]string, len(e.Looked))
	for i, p := range e.Looked {
		looked[i] = p
		if i < len(e.Why) && e.Why[i] != "" {
			looked[i] += " (" + e.Why[i] + ")"
		}
	}
	return fmt.Sprintf("no %s engine found: DOCKER_HOST is not set, and none of these answers: %s; start Podman's service (rootless: `systemctl --user start podman.socket`, rootful: `sudo systemctl start podman.socket`, or without systemd `podman system service --time=0 &`), or point DOCKER_HOST at its socket",
		kindTitle(e.Kind), strings.Join(looked, ", "))
}

// AddressOptions are where EngineAddress looks (for tests; zero: this process's).
type AddressOptions struct {
	Lookup func(string) (string, bool)
	UID    int
	// Probe checks the socket at path, which must belong to owner, and returns the path to
	// connect to (default: ProbeSocket with UID).
	Probe func(path string, owner int) (string, error)
}

// PodmanSockets are where Podman's service listens by default, in the order benchctl tries
// them: the user's rootless socket ($XDG_RUNTIME_DIR/podman/podman.sock, else
// /run/user/UID/podman/podman.sock), then the rootful /run/podman/podman.sock.
func PodmanSockets(o AddressOptions) []string {
	o = o.withDefaults()
	var out []string
	if x, ok := o.Lookup("XDG_RUNTIME_DIR"); ok && x != "" && o.UID != 0 {
		out = append(out, x+"/podman/podman.sock")
	}
	if o.UID != 0 {
		if p := "/run/user/" + strconv.Itoa(o.UID) + "/podman/podman.sock"; len(out) == 0 || out[0] != p {
			out = append(out, p)
		}
	}
	return append(out, rootfulPodmanSocket)
}

// rootfulPodmanSocket is where rootful Podman's service listens by default.
const rootfulPodmanSocket = "/run/podman/podman.sock"

func (o AddressOptions) withDefaults() AddressOptions {
	if o.Lookup == nil {
		o.Lookup, o.UID = os.LookupEnv, os.Getuid()
	}
	if o.Probe == nil {
		uid := o.UID
		o.Probe = func(p string, owner int) (string, error) { return ProbeSocket(p, owner, uid) }
	}
	return o
}

// EngineAddress is the address of the engine kind asks for: DOCKER_HOST when it is set
// (whatever the kind: the user named it, so it is used as given); else for Podman the
// first of PodmanSockets that is trusted and answers (see ProbeSocket), else (any kind,
// Docker) Docker's default socket. A Podman socket that is there but not trusted is an
// error (*SocketTrustError), not a reason to try the next: it is someone else's.
func EngineAddress(kind string, o AddressOptions) (string, error) {
	o = o.withDefaults()
	if h, ok := o.Lookup("DOCKER_HOST"); ok && h != "" {
		return h, nil
	}
	if kind != KindPodman {
		return client.DefaultDockerHost, nil
	}
	looked := PodmanSockets(o)
	why := make([]string, len(looked))
	for i, p := range looked {
		owner := o.UID
		if p == rootfulPodmanSocket {
			owner = 0
		}
		got, err := o.Probe(p, owner)
		var te *SocketTrustError
		switch {
		case err == nil:
			return "unix://" + got, nil
		case errors.As(err, &te):
			return "", err
		}
		why[i] = err.Error()
	}
	return "", &NoEngineError{Kind: kind, Looked: looked, Why: why}
}

// ConnectKind returns an Engine API client of the engine kind asks for (see EngineAddress),
// negotiating the API version as Connect does. It does not ask the engine anything: see
// Identify and CheckKind.
func ConnectKind(kind string) (*client.Client, error) {
	if err := CheckKindName("engine", kind); err != nil {
		return nil, err
	}
	if kind != KindPodman {
		return Connect()
	}
	host, err := EngineAddress(kind, AddressOptions{})
	if err != nil {
		return nil, err
	}
	if h, ok := os.LookupEnv("DOCKER_HOST"); ok && h != "" {
		return Connect() // DOCKER_HOST with its TLS settings, as Docker's CLI reads them
	}
	c, err := client.New(client.WithHost(host))
	if err != nil {
		return nil, fmt.Errorf("engine client for %s: %w", host, err)
	}
	return c, nil
}

// ConnectChecked connects to the engine kind asks for (ConnectKind) and, when a kind is
// asked for, checks within 30 s that the engine answering is of that kind (DOCKER_HOST may
// name another): a wrong kind is bad input naming both.
func ConnectChecked(ctx context.Context, kind string) (*client.Client, error) {
	c, err := ConnectKind(kind)
	if err != nil || kind == KindAny {
		return c, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id, err := Identify(ctx, c)
	if err == nil {
		err = CheckKind(kind, id)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
