package commands

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/workload/engine/podmanservice"
)

// ownPodmanService starts Podman's service for this command's work when Podman is asked
// for (kind), DOCKER_HOST names no engine, none of Podman's sockets answers, and podman is
// installed; nil when one of those is not so (the engine is then connected to as usual,
// and a missing one is the usual error). The caller stops it when its work ends.
func ownPodmanService(ctx context.Context, kind, job string, rank int) (*podmanservice.Service, error) {
	if kind != image.KindPodman {
		return nil, nil
	}
	if h, ok := os.LookupEnv("DOCKER_HOST"); ok && h != "" {
		return nil, nil
	}
	_, err := image.EngineAddress(kind, image.AddressOptions{})
	var none *image.NoEngineError
	if !errors.As(err, &none) || !podmanservice.Installed("") {
		return nil, nil
	}
	s, err := podmanservice.Start(ctx, podmanservice.Options{Job: job, Rank: rank})
	if err != nil {
		return nil, err
	}
	slog.Info("no Podman service answered: benchctl started one for this run, and stops it when the run ends", "socket", s.Host, "pid", s.Pid())
	return s, nil
}
