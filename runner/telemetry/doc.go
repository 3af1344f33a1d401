// Package telemetry samples a node's GPUs while each benchmark container runs: one sampler
// for the node's selected GPUs (opened once, closed when the node's run ends), each run's
// samples folded into its bounded series file and summed up in its summary, in the node
// folder. Nothing here can fail or delay a benchmark.
package telemetry
