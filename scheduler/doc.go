// Package scheduler is the seam between benchctl and the batch systems that start its jobs:
// the node context a task reads from its environment (Node), and the Scheduler interface
// that each batch system implements in a folder of its own beneath this one (local,
// slurm; kubernetes next). A node's run (package runner) is handed a Node and never asks a
// scheduler anything itself; commands pick the scheduler whose job this is (DetectNode).
//
// Adding a scheduler is one new folder implementing Scheduler, a manifest block for what
// it submits with, and a line in cmd/benchctl's list; schedulertest's conformance suite
// runs against each.
//
// This package holds the vocabulary only (types, the rules every scheduler's node context
// obeys, the detection order); it never prints and starts nothing.
package scheduler
