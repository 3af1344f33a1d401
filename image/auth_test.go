package image

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if c, err := CredentialsFromSecret("REG", " tok \n"); err != nil || c.IdentityToken != "tok" || c.Username != "" {
		t.Errorf("%+v %v", c, err)
	}
	if _, err := CredentialsFromSecret("REG", ""); err == nil || !strings.Contains(err.Error(), "the secret REG is empty") {
		t.Errorf("%v", err)
	}
}
