//go:build !linux

package podmanservice

import (
	"context"
	"errors"
	"net"
)

// Marker names the job and rank of a service benchctl started.
const Marker = "BENCHCTL_PODMAN_SERVICE"

// Options say how to start a service.
type Options struct {
	Podman string
	Job    string
	Rank   int
	Dir    string
}

// Service is a running Podman service (Linux only).
type Service struct{ Host string }

// Installed is false: benchctl starts Podman's service on Linux only.
func Installed(string) bool { return false }

// Start says that benchctl starts Podman's service on Linux only.
func Start(context.Context, Options) (*Service, error) {
	return nil, errors.New("benchctl starts Podman's service on Linux only")
}

// Stop does nothing.
func (s *Service) Stop() {}

// DialContext says that benchctl starts Podman's service on Linux only.
func (s *Service) DialContext(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("benchctl starts Podman's service on Linux only")
}

// Pid is 0.
func (s *Service) Pid() int { return 0 }

// EndLeft ends nothing.
func EndLeft(string) (int, error) { return 0, nil }
