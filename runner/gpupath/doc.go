// Package gpupath is how a node's selected GPUs reach a container on its engine, and why:
// the engine's facts (Docker or Podman, its version and Engine API version, rootless, the
// CDI spec folders it reads) and, for NVIDIA, CDI devices where the engine takes them and
// the node's specs name every selected GPU, else the NVIDIA device request (which Podman
// drops: an error there, not a container without GPUs).
package gpupath
