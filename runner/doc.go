// Package runner runs a benchmark job on one node: it works out the node's place in the
// job (rank, world, master), meets the other nodes at an authenticated TCP barrier, makes
// sure the image is on the node's engine, runs the benchmark containers and leaves a
// status file whatever happens.
package runner
