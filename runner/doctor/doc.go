// Package doctor checks that a node can run benchmarks (`benchctl doctor`): its node
// context, its engine (and what a rootless one cannot give), its record (what the node is),
// the shared directory (writable, the same on every node of an srun, the clock), and,
// against a manifest, its GPUs, how they reach a container, whether they are busy, and disk
// space. Under a multi-node srun rank 0 compares every node's driver and firmware.
package doctor
