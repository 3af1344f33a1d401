package image

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/moby/moby/client"
)

// Connect returns an Engine API client for DOCKER_HOST (or the default socket) that
// negotiates the API version with the engine, so old engines (API 1.41, Docker 20.10) work.
func Connect() (*client.Client, error) {
	c, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker engine client for %s: %w", EngineHost(), err)
	}
	return c, nil
}

// EngineHost is the engine address Connect uses, for messages.
func EngineHost() string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return client.DefaultDockerHost
}

// EngineInfo identifies one Docker Engine.
type EngineInfo struct {
	Host       string   `json:"host"`
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	APIVersion string   `json:"apiVersion"`
	OS         string   `json:"os"`
	Arch       string   `json:"arch"`
	Labels     []string `json:"labels,omitempty"`
}

// Describe asks an engine who it is.
func Describe(ctx context.Context, c *client.Client) (EngineInfo, error) {
	info := EngineInfo{Host: c.DaemonHost()}
	ver, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return info, engineError(info.Host, err)
	}
	sys, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return info, engineError(info.Host, err)
	}
	info.ID, info.Name, info.Labels = sys.Info.ID, sys.Info.Name, sys.Info.Labels
	info.Version, info.APIVersion, info.OS, info.Arch = ver.Version, ver.APIVersion, ver.Os, ver.Arch
	return info, nil
}

// engineError explains an unreachable engine with a hint.
func engineError(host string, err error) error {
	msg := err.Error()
	hint := "is dockerd running, and is DOCKER_HOST right?"
	if strings.Contains(msg, "permission denied") {
		hint = "add your user to the docker group, or run as root"
	}
	return fmt.Errorf("docker engine at %s is not reachable (%s): %w", host, hint, err)
}

// ConnectHost returns an Engine API client of the engine at host (a DOCKER_HOST value),
// without TLS: a socket benchctl found or started itself.
func ConnectHost(host string) (*client.Client, error) {
	return connectHost(host)
}

// ConnectDialing is ConnectHost whose connections are made by dial (a supervised
// service's, which waits for it to be started again).
func ConnectDialing(host string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*client.Client, error) {
	return connectHost(host, client.WithDialContext(dial))
}

func connectHost(host string, opts ...client.Opt) (*client.Client, error) {
	c, err := client.New(append([]client.Opt{client.WithHost(host)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("engine client for %s: %w", host, err)
	}
	return c, nil
}
