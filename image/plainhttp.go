package image

import (
	"fmt"
	"strings"
)

// plainHTTPHint adds what to do to an engine's pull or push error where the registry at
// host speaks plain HTTP and the engine asked for HTTPS ("server gave HTTP response to
// HTTPS client"). The engines differ here: Docker takes plain HTTP from 127.0.0.0/8 and
// from its daemon.json insecure-registries; Podman takes it from no registry that
// registries.conf does not mark insecure, loopback addresses included (a registry that
// Docker pulls from on the same host fails on Podman).
func plainHTTPHint(host string, err error) error {
	if err == nil || !strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return err
	}
	return fmt.Errorf("%w (the registry %s speaks plain HTTP, and the engine asked for HTTPS: for Podman, add [[registry]] location = %q, insecure = true to registries.conf (/etc/containers/registries.conf, or the file CONTAINERS_REGISTRIES_CONF names) and restart its service, as Podman trusts no plain-HTTP registry by default, loopback ones included; for Docker, add it to insecure-registries in daemon.json; or serve the registry over HTTPS)", err, host, host)
}
