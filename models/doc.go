// Package models reads benchmark catalogs in the madengine/MAD models.json format, selects
// models by name or tag, and turns them into manifest benchmarks. Its sub-folders hold the
// example benchmarks shipped with benchctl (dummy, cpubench, allreduce), each with a
// Dockerfile and a benchmark.yaml manifest, listed together in models.json.
package models
