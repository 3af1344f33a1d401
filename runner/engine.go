package runner

import (
	"io"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/workload/engine"
)

// Engine is what a node's run asks of this node's Docker Engine: the image phase's calls
// (image.Engine), the calls of the benchmark's runtime (engine.API: its containers run
// through workload/engine's Runtime), and Close when the run ends. Tests give Run a fake
// through Options.Engine.
type Engine interface {
	image.Engine
	engine.API
	io.Closer
}
