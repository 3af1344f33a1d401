// Package filelock is benchctl's one exclusive file lock: flock(2) where it locks across
// machines, else an O_EXCL lock file that its holder keeps fresh and a waiter takes over
// once it is stale. It guards work that must not be done twice at once (an image build,
// an append to a perf.csv); correctness never depends on it.
//
// flock is not enough everywhere: on NFS mounted with nolock (or local_lock=flock or
// local_lock=all) flock succeeds but locks on this client only, so two nodes could both
// hold it. Acquire detects such a filesystem (statfs says NFS, and the mount options say
// so) and uses the lock file there.
package filelock
