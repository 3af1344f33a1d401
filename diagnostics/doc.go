// Package diagnostics captures what a person needs to understand a failed benchmark
// container — exit code, OOM kill, the end of its log, its processes and listening sockets
// while it still runs, the engine's version, the GPUs it was given and, when it was given
// any, what the node's GPU management library (AMD SMI or NVML, through package gpu) says
// every GPU is doing: memory in use, temperature, processes — and writes it, bounded in
// size, next to the node's status. Capturing never fails the caller: what cannot be read
// (no GPU library on the node included) is noted in the report instead.
package diagnostics
