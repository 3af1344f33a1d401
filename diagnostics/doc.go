// Package diagnostics captures what a person needs to understand a failed benchmark
// container — exit code, OOM kill, the end of its log, its processes and listening sockets
// while it still runs, the engine's version, the GPUs it was given — and writes it, bounded
// in size, next to the node's status. Capturing never fails the caller: what cannot be
// read is noted in the report instead.
package diagnostics
