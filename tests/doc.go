// Package tests holds benchctl's end-to-end tests against a real Slurm cluster with one Docker
// Engine per node (the testbed, tests/testbed/). Run them with `make e2e` or `make test`.
package tests
