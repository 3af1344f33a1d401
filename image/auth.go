package image

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/registry"

	"github.com/benchctl/benchctl/internal/safefile"
)

// Registry credentials, as the docker CLI keeps them: $DOCKER_CONFIG/config.json (default
// ~/.docker/config.json) with `auths` (base64 user:password, or an identity token),
// `credHelpers` (a helper per registry) and `credsStore` (a helper for all), a helper
// being the program docker-credential-<name>, run in exec form with the server on stdin.
// A credential is never logged, printed or written: it goes from here to the engine's
// X-Registry-Auth header, and nowhere else.

// hubServer is the key the docker CLI stores Docker Hub's credentials under.
const hubServer = "https://index.docker.io/v1/"

// serverAddress is the server a registry host's credentials are kept and sent under: the
// docker CLI's key for Docker Hub, else the host.
func serverAddress(host string) string {
	if host == "docker.io" {
		return hubServer
	}
	return host
}

// Credentials are what a registry is asked to accept. Source says where they came from
// (for messages; never the secret itself).
type Credentials struct {
	Username, Password, IdentityToken string
	Source                            string
}

// RegistryOf is the registry host of an image reference: "docker.io" for Docker Hub's.
func RegistryOf(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", err
	}
	return reference.Domain(named), nil
}

// CredentialsFromSecret parses a secret's value "username:password" (a registry token goes
// where the password goes, with the user name it belongs to), for image.pullSecret.
func CredentialsFromSecret(name, value string) (*Credentials, error) {
	value = strings.TrimSpace(value)
	u, p, ok := strings.Cut(value, ":")
	if !ok || u == "" || p == "" {
		return nil, fmt.Errorf("the variable %s (image.pullSecret) must be username:password (a registry token goes where the password goes, with its user name); its value is not shown", name)
	}
	return &Credentials{Username: u, Password: p, Source: "the variable " + name}, nil
}

// dockerConfig is the part of the docker CLI's config.json that holds credentials.
type dockerConfig struct {
	Auths map[string]struct {
		Auth          string `json:"auth"`
		IdentityToken string `json:"identitytoken"`
	} `json:"auths"`
	CredHelpers map[string]string `json:"credHelpers"`
	CredsStore  string            `json:"credsStore"`
}

// DockerConfigPath is the docker CLI's config.json: $DOCKER_CONFIG/config.json, else
// ~/.docker/config.json.
func DockerConfigPath(lookup func(string) (string, bool)) string {
	if d, ok := lookup("DOCKER_CONFIG"); ok && d != "" {
		return filepath.Join(d, "config.json")
	}
	home, _ := lookup("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".docker", "config.json")
}

// LookupCredentials finds the credentials for a registry host in the docker CLI's config,
// as the docker CLI does: a credential helper for the host, else the credential store when
// one is set (then auths is not read), else auths. None found is (nil, nil): the pull goes
// without credentials, as `docker pull` does.
func LookupCredentials(ctx context.Context, host string, lookup func(string) (string, bool)) (*Credentials, error) {
	path := DockerConfigPath(lookup)
	data, err := safefile.ReadFile(path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the docker config %s: %w", path, err)
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("the docker config %s is not JSON: %w", path, err)
	}
	server := serverAddress(host)
	for k, helper := range cfg.CredHelpers {
		if serverHost(k) == serverHost(server) && helper != "" {
			return runHelper(ctx, helper, server)
		}
	}
	if cfg.CredsStore != "" { // the store is authoritative, as for the docker CLI: auths is not read
		return runHelper(ctx, cfg.CredsStore, server)
	}
	for k, a := range cfg.Auths {
		if serverHost(k) != serverHost(server) {
			continue
		}
		c := &Credentials{IdentityToken: a.IdentityToken, Source: path}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the docker config %s: auths.%s.auth is not base64 user:password", path, k)
			}
			u, p, ok := strings.Cut(string(raw), ":")
			if !ok {
				return nil, fmt.Errorf("the docker config %s: auths.%s.auth is not base64 user:password", path, k)
			}
			c.Username, c.Password = u, p
		}
		if c.Username != "" || c.IdentityToken != "" {
			return c, nil
		}
	}
	return nil, nil
}

// serverHost is a config key's host: "https://index.docker.io/v1/" is "index.docker.io".
func serverHost(k string) string {
	k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
	if i := strings.IndexByte(k, '/'); i >= 0 {
		k = k[:i]
	}
	if k == "docker.io" || k == "registry-1.docker.io" {
		return "index.docker.io"
	}
	return k
}

// helperTimeout bounds a credential helper (one that asks a keychain may hang).
const helperTimeout = 30 * time.Second

// runHelper asks docker-credential-<name> for the server's credentials (exec form: the
// server on stdin, JSON on stdout). "credentials not found" is no credentials.
func runHelper(ctx context.Context, name, server string) (*Credentials, error) {
	if strings.ContainsAny(name, "/\\ \t\n") {
		return nil, fmt.Errorf("credential helper %q is not a helper name (docker-credential-<name>)", name)
	}
	prog := "docker-credential-" + name
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, "get")
	cmd.Stdin = strings.NewReader(server)
	// Not in a process group of its own (internal/procgroup): a helper may ask for a
	// passphrase on the terminal (pass, gpg's pinentry), which a background group may not
	// read, and the keyring agent it starts is meant to outlive it.
	// A helper whose child keeps stdout open (a keyring daemon it started) must not hold
	// the node: after the helper ends, or is killed at the timeout, wait 2 s at most.
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		err = nil // it answered and ended; only a child of its kept the pipe open
	}
	if err != nil {
		// Its stdout may hold the credential (a helper killed after answering): it is only
		// looked at for "not found", and never reported.
		if strings.Contains(strings.ToLower(out.String()+errb.String()), "credentials not found") {
			return nil, nil
		}
		// Neither its output nor its errors are shown: either may hold the credential.
		return nil, fmt.Errorf("credential helper %s for %s failed (%v); its output is not shown, as it may hold the credential: run `echo %s | %s get` to see it", prog, server, err, server, prog)
	}
	var resp struct{ Username, Secret string }
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("credential helper %s for %s did not answer JSON: %w", prog, server, err)
	}
	c := &Credentials{Username: resp.Username, Password: resp.Secret, Source: prog}
	if resp.Username == "<token>" {
		c.Username, c.Password, c.IdentityToken = "", "", resp.Secret
	}
	return c, nil
}

// source says where c came from, for messages ("" for none).
func (c *Credentials) source() string {
	if c == nil {
		return ""
	}
	return c.Source
}

// encode is the X-Registry-Auth header value for the engine.
func (c *Credentials) encode(server string) (string, error) {
	if c == nil {
		return "", nil
	}
	data, err := json.Marshal(registry.AuthConfig{Username: c.Username, Password: c.Password,
		IdentityToken: c.IdentityToken, ServerAddress: server})
	if err != nil {
		return "", err
	}
	return base64.URLEncoding.EncodeToString(data), nil
}
