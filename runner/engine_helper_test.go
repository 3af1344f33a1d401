package runner

import (
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/runner/gpupath"
	"github.com/benchctl/benchctl/workload/engine"
)

// ContainerEngine is the Engine API the tests' fake engines answer as: a run reaches them
// through workload/engine's Runtime (runContainer(ctx, engine.New(fake), ...)).
type ContainerEngine = engine.API

// configOf is a spec as the engine gets it (without adaptToEngine's changes).
func configOf(s Spec) (*container.Config, *container.HostConfig) { return engine.Config(s.Process()) }

// factsOf is the run's facts of a version answer and an /info answer (infoErr: it failed).
func factsOf(v client.ServerVersionResult, info client.SystemInfoResult, infoErr error) EngineFacts {
	if infoErr != nil {
		return gpupath.EngineFactsOf(engine.FactsOf(v, nil, infoErr))
	}
	return gpupath.EngineFactsOf(engine.FactsOf(v, &info, nil))
}
