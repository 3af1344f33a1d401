// Package workload is the room where a benchmark's process lives: one Runtime interface,
// in benchctl's words, for making a benchmark's process from a Spec, starting it, waiting
// for its end, reading its output, stopping it with a grace, removing it, finding a job's
// processes by their labels, and looking inside one for diagnostics. Package runner runs
// benchmarks through it, diagnostics looks through it, cleanup finds leftovers through it;
// none of them names a container engine's types.
//
// Its implementations are rooms beneath it: workload/engine (Docker's and Podman's Engine
// API: the one holder of moby's client types outside image building), and next a process
// runtime (a child process group on the node). A fake of Runtime lets runner's tests make
// any of its calls fail, hang or lie.
//
// This package holds the vocabulary only; it never prints.
package workload
