// Package tests holds benchctl's end-to-end tests against a real Slurm cluster with one Docker
// Engine per node (the testbed, tests/testbed/). Run them with `make e2e` or `make test`.
//
// Test hooks of benchctl that only these tests use (in no help text, never for users):
// BENCHCTL_TEST_HOST_ROOT=<rank>:<folder> makes the node of that rank (benchctl run and
// doctor) read its machine facts for its node record under folder, a recorded tree of
// tests/fixtures/host, so that one machine can play a cluster whose nodes differ.
package tests
