// Package procgroup starts a child program in a process group of its own, so that what it
// starts ends with it: a context that ends (a timeout, a cancelled run) kills the whole
// group, not only the child, whose own children (a keyring daemon a credential helper
// started, a worker a Python script forked) would otherwise outlive it.
package procgroup
