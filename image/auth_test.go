package image

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Credentials come from the docker CLI's config as docker finds them: a credential helper
// for the registry (run in exec form, the server on stdin), else auths, else the default
// store; none is an anonymous pull; a damaged config is an error naming it.
func TestLookupCredentials(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	// A helper that knows one server and says "not found" for the others, as real ones do.
	helper := "#!/bin/sh\nread server\nif [ \"$server\" = helped.example ]; then echo '{\"ServerURL\":\"helped.example\",\"Username\":\"hu\",\"Secret\":\"hs\"}'; " +
		"elif [ \"$server\" = token.example ]; then echo '{\"Username\":\"<token>\",\"Secret\":\"tok\"}'; " +
		"else echo 'credentials not found in native keychain'; exit 1; fi\n"
	os.WriteFile(filepath.Join(bin, "docker-credential-fake"), []byte(helper), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	cfgDir := filepath.Join(dir, "cfg")
	os.Mkdir(cfgDir, 0o700)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{
  "auths": {"127.0.0.1:5000": {"auth": "`+b64("alice:pw1")+`"}, "https://index.docker.io/v1/": {"auth": "`+b64("hubuser:pw2")+`"},
            "http://plain.example/v2/": {"auth": "`+b64("bob:pw3")+`"}},
  "credHelpers": {"helped.example": "fake", "token.example": "fake"}
}`), 0o600)
	env := map[string]string{"DOCKER_CONFIG": cfgDir}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	ctx := context.Background()
	for host, want := range map[string]string{
		"127.0.0.1:5000": "alice/pw1/", "docker.io": "hubuser/pw2/", "plain.example": "bob/pw3/",
		"helped.example": "hu/hs/", "token.example": "//tok", "nobody.example": "none",
	} {
		c, err := LookupCredentials(ctx, host, lookup)
		got := "none"
		if c != nil {
			got = c.Username + "/" + c.Password + "/" + c.IdentityToken
		}
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", host, got, err, want)
		}
	}
	// The default store, for registries without their own entry.
	os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"credsStore": "fake"}`), 0o600)
	if c, err := LookupCredentials(ctx, "helped.example", lookup); err != nil || c == nil || c.Username != "hu" || c.Source != "docker-credential-fake" {
		t.Errorf("credsStore: %+v %v", c, err)
	}
	// A helper that is not there, a damaged config, a bad auth, a helper name with a path.
	for body, want := range map[string]string{
		`{"credsStore": "missing"}`: "credential helper docker-credential-missing for helped.example failed",
		`{"auths": `:                "is not JSON",
		`{"auths": {"helped.example": {"auth": "%%%"}}}`:    "auths.helped.example.auth is not base64 user:password",
		`{"credHelpers": {"helped.example": "../../evil"}}`: `credential helper "../../evil" is not a helper name`,
	} {
		os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(body), 0o600)
		if _, err := LookupCredentials(ctx, "helped.example", lookup); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	// No config at all: an anonymous pull.
	env["DOCKER_CONFIG"] = filepath.Join(dir, "none")
	if c, err := LookupCredentials(ctx, "docker.io", lookup); c != nil || err != nil {
		t.Errorf("no config: %+v %v", c, err)
	}
}

func TestCredentialsFromSecret(t *testing.T) {
	if c, err := CredentialsFromSecret("REG", "user:pa:ss"); err != nil || c.Username != "user" || c.Password != "pa:ss" {
		t.Errorf("%+v %v", c, err)
	}
	// A token alone, or nothing: refused, and the value is never in the message.
	for _, v := range []string{"tok-abcdef-123456", "", ":only-pass", "user:"} {
		if _, err := CredentialsFromSecret("REG", v); err == nil || !strings.Contains(err.Error(), "REG (image.pullSecret) must be username:password") ||
			(v != "" && strings.Contains(err.Error(), v)) {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// A credential helper never leaks the credential into an error (one killed after it
// answered, one that failed), and one whose child keeps its stdout open does not hold the
// caller; the docker CLI's order holds: a credential store wins over a stale auths entry.
func TestCredentialHelperHazards(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		os.WriteFile(filepath.Join(dir, "docker-credential-"+name), []byte("#!/bin/sh\n"+body), 0o755)
	}
	write("leaky", `echo '{"Username":"alice","Secret":"S3CRET-TOKEN"}'; echo "oops: S3CRET-TOKEN" >&2; exit 1`+"\n")
	// The child outlives the test unless it is killed (its pid in a file): a lookup it
	// held would wait for it for an hour.
	childPID := filepath.Join(t.TempDir(), "child.pid")
	write("child", `echo '{"Username":"bob","Secret":"pw"}'; sleep 3600 & echo $! >'`+childPID+`'; exit 0`+"\n")
	t.Cleanup(func() {
		if b, err := os.ReadFile(childPID); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	cfg := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == "DOCKER_CONFIG" {
			return cfg, true
		}
		return "", false
	}
	os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"credsStore": "leaky"}`), 0o600)
	if _, err := LookupCredentials(context.Background(), "reg.example", lookup); err == nil || strings.Contains(err.Error(), "S3CRET") {
		t.Errorf("leaky: %v", err)
	}
	start := time.Now()
	os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"credsStore": "child", "auths": {"reg.example": {"auth": "`+base64.StdEncoding.EncodeToString([]byte("stale:old"))+`"}}}`), 0o600)
	type lookedUp struct {
		c   *Credentials
		err error
	}
	done := make(chan lookedUp, 1)
	go func() {
		c, err := LookupCredentials(context.Background(), "reg.example", lookup)
		done <- lookedUp{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil || r.c == nil || r.c.Username != "bob" {
			t.Errorf("child: %+v %v", r.c, r.err)
		}
		t.Logf("the lookup returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(2 * time.Minute): // does not hang: held, it would wait out the child's hour
		t.Errorf("the helper's child held the lookup for %v", time.Since(start).Round(time.Second))
	}
}
