package testbed

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// The testbed runs two CNCF distribution registries (Debian's docker-registry 2.8) on loopback
// addresses (see README.md): tb.Registry without auth and tb.AuthRegistry with htpasswd auth.
// Every engine accepts plain HTTP from them (127.0.0.0/8 is Docker's default insecure range).

const registryOpTimeout = 3 * time.Minute

// RequireRegistry skips the test when the testbed has no registries (an env file written by
// an older up.sh), or fails it under CI=true.
func (tb *Testbed) RequireRegistry(t testing.TB) {
	t.Helper()
	if tb.Registry != "" && tb.AuthRegistry != "" && tb.AuthRegistryPasswordFile != "" {
		return
	}
	msg := "the testbed has no registries (BENCHCTL_TESTBED_REGISTRY, BENCHCTL_TESTBED_AUTH_REGISTRY in " + EnvFile() + "): run tests/testbed/up.sh again"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
}

// AuthRegistryPassword reads the password of AuthRegistryUser from its 0600 file.
func (tb *Testbed) AuthRegistryPassword(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(tb.AuthRegistryPasswordFile)
	if err != nil {
		t.Fatalf("auth registry password: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// EncodeRegistryAuth returns the value of the Engine API's X-Registry-Auth header for these
// credentials: the base64url JSON of a registry.AuthConfig. Empty user and password give the
// encoding of an empty AuthConfig, which an engine's push needs for a registry without auth.
func EncodeRegistryAuth(serverAddress, user, password string) string {
	cfg := registry.AuthConfig{Username: user, Password: password}
	if user != "" {
		cfg.ServerAddress = serverAddress
	}
	b, _ := json.Marshal(cfg)
	return base64.URLEncoding.EncodeToString(b)
}

// RegistryAuth returns the X-Registry-Auth value for a reference (or a registry HOST:PORT):
// the test user's credentials when it names the auth registry, no credentials otherwise.
func (tb *Testbed) RegistryAuth(t testing.TB, refOrHost string) string {
	t.Helper()
	host := registryHost(refOrHost)
	if tb.AuthRegistry != "" && host == tb.AuthRegistry {
		return EncodeRegistryAuth(host, tb.AuthRegistryUser, tb.AuthRegistryPassword(t))
	}
	return EncodeRegistryAuth(host, "", "")
}

// registryHost is the registry part of a reference, or refOrHost itself when it does not parse
// as a reference with a path (a bare HOST:PORT).
func registryHost(refOrHost string) string {
	if !strings.Contains(refOrHost, "/") {
		return refOrHost
	}
	named, err := reference.ParseNormalizedNamed(refOrHost)
	if err != nil {
		return refOrHost
	}
	return reference.Domain(named)
}

// WriteDockerConfig writes dir/config.json with credentials for the auth registry, as `docker
// login` does (`auths` with base64 user:password), and returns dir, for a DOCKER_CONFIG.
// Pass other user/password values to test refused credentials.
func (tb *Testbed) WriteDockerConfig(t testing.TB, dir, user, password string) string {
	t.Helper()
	cfg := map[string]any{"auths": map[string]any{
		tb.AuthRegistry: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
	}}
	b, _ := json.MarshalIndent(cfg, "", "\t")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// PushToRegistry tags localRef (an image on node's engine) as registryRef and pushes it through
// node's engine, with the test user's credentials when registryRef names the auth registry.
// It returns the digest of the pushed manifest. The tag stays on node's engine.
func (tb *Testbed) PushToRegistry(t testing.TB, node, localRef, registryRef string) string {
	t.Helper()
	eng := tb.Engine(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), registryOpTimeout)
	defer cancel()
	if _, err := eng.ImageTag(ctx, client.ImageTagOptions{Source: localRef, Target: registryRef}); err != nil {
		t.Fatalf("%s: tag %s as %s: %v", node, localRef, registryRef, err)
	}
	resp, err := eng.ImagePush(ctx, registryRef, client.ImagePushOptions{RegistryAuth: tb.RegistryAuth(t, registryRef)})
	if err != nil {
		t.Fatalf("%s: push %s: %v", node, registryRef, err)
	}
	digest := ""
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			t.Fatalf("%s: push %s: reading the progress stream: %v", node, registryRef, err)
		}
		if msg.Error != nil {
			t.Fatalf("%s: push %s: %s", node, registryRef, msg.Error.Message)
		}
		if msg.Aux != nil {
			var aux struct{ Tag, Digest string }
			if json.Unmarshal(*msg.Aux, &aux) == nil && aux.Digest != "" {
				digest = aux.Digest
			}
		}
	}
	if digest == "" {
		t.Fatalf("%s: push %s: the engine reported no manifest digest", node, registryRef)
	}
	return digest
}

// PullFromRegistry pulls ref through node's engine (with the test user's credentials when ref
// names the auth registry) and returns the pulled image's id.
func (tb *Testbed) PullFromRegistry(t testing.TB, node, ref string) string {
	t.Helper()
	eng := tb.Engine(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), registryOpTimeout)
	defer cancel()
	if err := PullImage(ctx, eng, ref, tb.RegistryAuth(t, ref)); err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	inspect, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatalf("%s: inspect %s after its pull: %v", node, ref, err)
	}
	return inspect.ID
}

// PullImage pulls ref through an engine with an X-Registry-Auth value (EncodeRegistryAuth) and
// drains the progress stream; an error message in the stream is the error.
func PullImage(ctx context.Context, eng *client.Client, ref, registryAuth string) error {
	resp, err := eng.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: registryAuth})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return fmt.Errorf("pull %s: reading the progress stream: %w", ref, err)
		}
		if msg.Error != nil {
			return fmt.Errorf("pull %s: %s", ref, msg.Error.Message)
		}
	}
	return nil
}

// RemoveImage removes an image, by reference or id, from every node's engine (forced, with its
// untagged parents), so that a test can start with cold engines; an engine without it is fine.
// By reference it removes that tag (the image goes with its last tag); by id, every tag.
// Layers that other images on an engine still use stay there, and an engine that knows their
// blob digests skips fetching them: count blob fetches with images of the test's own.
func (tb *Testbed) RemoveImage(t testing.TB, refOrID string) {
	t.Helper()
	for _, n := range tb.Nodes {
		tb.RemoveImageFrom(t, n, refOrID)
	}
}

// RemoveImageFrom removes an image, by reference or id, from one node's engine (see RemoveImage).
func (tb *Testbed) RemoveImageFrom(t testing.TB, node, refOrID string) {
	t.Helper()
	eng := tb.Engine(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), registryOpTimeout)
	defer cancel()
	_, err := eng.ImageRemove(ctx, refOrID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatalf("%s: remove image %s: %v", node, refOrID, err)
	}
}

// RegistryManifest reads the manifest of registryRef (REGISTRY/NAME:TAG or @DIGEST) straight
// from the registry, and returns its digest and its blobs: the config's digest, then the
// layers'. These are what an engine's pull GETs (see RegistryBlobGets).
func (tb *Testbed) RegistryManifest(t testing.TB, registryRef string) (digest string, blobs []string) {
	t.Helper()
	named, err := reference.ParseNormalizedNamed(registryRef)
	if err != nil {
		t.Fatalf("manifest of %s: %v", registryRef, err)
	}
	host, path := reference.Domain(named), reference.Path(named)
	tag := "latest"
	if d, ok := named.(reference.Digested); ok {
		tag = d.Digest().String()
	} else if tg, ok := named.(reference.Tagged); ok {
		tag = tg.Tag()
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+host+"/v2/"+path+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	req.Header.Set("User-Agent", "benchctl-testbed")
	if host == tb.AuthRegistry {
		req.SetBasicAuth(tb.AuthRegistryUser, tb.AuthRegistryPassword(t))
	}
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("manifest of %s: %v", registryRef, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("manifest of %s: %s: %s", registryRef, resp.Status, body)
	}
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Config.Digest == "" {
		t.Fatalf("manifest of %s: not an image manifest (%v): %s", registryRef, err, body)
	}
	blobs = append(blobs, m.Config.Digest)
	for _, l := range m.Layers {
		blobs = append(blobs, l.Digest)
	}
	return resp.Header.Get("Docker-Content-Digest"), blobs
}

// RegistryLogFile returns the log file of a registry given by its address (tb.Registry or
// tb.AuthRegistry); a path (anything with a slash) is taken as the log file itself.
func (tb *Testbed) RegistryLogFile(t testing.TB, registryLogOrAddr string) string {
	t.Helper()
	switch {
	case strings.Contains(registryLogOrAddr, "/"):
		return registryLogOrAddr
	case registryLogOrAddr != "" && registryLogOrAddr == tb.Registry && tb.RegistryLog != "":
		return tb.RegistryLog
	case registryLogOrAddr != "" && registryLogOrAddr == tb.AuthRegistry && tb.AuthRegistryLog != "":
		return tb.AuthRegistryLog
	}
	t.Fatalf("%q is not one of the testbed's registries (%s, %s)", registryLogOrAddr, tb.Registry, tb.AuthRegistry)
	return ""
}

// RegistryLogOffset returns the current size of a registry's log: pass it to
// RegistryBlobGetsSince to count only what a test did after this point.
func (tb *Testbed) RegistryLogOffset(t testing.TB, registryLogOrAddr string) int64 {
	t.Helper()
	tb.syncRegistryLog(t, registryLogOrAddr)
	fi, err := os.Stat(tb.RegistryLogFile(t, registryLogOrAddr))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// RegistryBlobGets counts how many times the registry served the blob digest (sha256:...) by a
// successful GET (2xx, in any repository) according to its access log, since the log began.
func (tb *Testbed) RegistryBlobGets(t testing.TB, registryLogOrAddr, digest string) int {
	t.Helper()
	return tb.RegistryBlobGetsSince(t, registryLogOrAddr, 0, digest)
}

// RegistryBlobGetsSince is RegistryBlobGets for the part of the log after offset (from
// RegistryLogOffset).
func (tb *Testbed) RegistryBlobGetsSince(t testing.TB, registryLogOrAddr string, offset int64, digest string) int {
	t.Helper()
	tb.syncRegistryLog(t, registryLogOrAddr)
	f, err := os.Open(tb.RegistryLogFile(t, registryLogOrAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	n, err := CountBlobGets(f, digest)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// syncRegistryLog makes sure that the registry has logged every request answered so far: it
// sends a marked request and waits until the marker is in the log (a registry logs a request
// just after its answer). It does nothing when given a log path.
func (tb *Testbed) syncRegistryLog(t testing.TB, registryLogOrAddr string) {
	t.Helper()
	if strings.Contains(registryLogOrAddr, "/") {
		return
	}
	file := tb.RegistryLogFile(t, registryLogOrAddr)
	var from int64
	if fi, err := os.Stat(file); err == nil {
		from = fi.Size()
	}
	marker := fmt.Sprintf("benchctl-testbed-sync-%d", time.Now().UnixNano())
	req, err := http.NewRequest(http.MethodGet, "http://"+registryLogOrAddr+"/v2/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", marker)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("registry %s: %v", registryLogOrAddr, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if logContains(file, from, `"`+marker+`"`) {
			return
		}
	}
	t.Fatalf("registry %s: a request did not reach its log %s in 10 s", registryLogOrAddr, file)
}

// logContains says whether file holds s after offset from.
func logContains(file string, from int64, s string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<40))
	return err == nil && strings.Contains(string(b), s)
}

// accessLine matches a line of the registry's access log (Apache combined format):
//
//	127.0.0.1 - - [25/Nov/2026:10:10:11 +0000] "GET /v2/e2e/hello/blobs/sha256:9f86… HTTP/1.1" 200 2225818 "" "docker/20.10.24+dfsg1 …"
var accessLine = regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]*\] "([A-Z]+) (\S+) [^"]*" (\d{3}) `)

// CountBlobGets counts the access-log lines in r that are a successful (2xx) GET of
// /v2/<name>/blobs/<digest>. The registry's other lines (logrus "response completed" lines,
// HEADs, uploads, manifests) do not count.
func CountBlobGets(r io.Reader, digest string) (int, error) {
	n := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		m := accessLine.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != http.MethodGet || m[3][0] != '2' {
			continue
		}
		path, _, _ := strings.Cut(m[2], "?")
		if strings.HasPrefix(path, "/v2/") && strings.HasSuffix(path, "/blobs/"+digest) {
			n++
		}
	}
	return n, sc.Err()
}
