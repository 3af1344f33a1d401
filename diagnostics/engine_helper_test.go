package diagnostics

import "github.com/benchctl/benchctl/workload/engine"

// Engine is the Engine API that the tests' fake engines answer as; capture reaches them
// through workload/engine's Runtime, as a run does.
type Engine = engine.API
