// Package host has one job: read what this machine is — kernel, operating system, CPU,
// memory, NUMA layout, InfiniBand and RoCE devices, Slurm's version — as one typed Facts,
// for a node's record (jobdir.NodeRecord) and benchctl doctor.
//
// Everything is read from files under a root ("/" unless Options.Root names a recorded
// tree: the tests' tests/fixtures/host, or the test hook of benchctl run), never by
// running a shell. The one program it may start is Slurm's own `srun --version` (an
// argument list, bounded by a timeout), and only inside a Slurm job. Reads are bounded:
// a FIFO, socket or device is refused without blocking (internal/safefile), a file over
// its size cap is refused, a folder listing is capped, and every value is cut to
// MaxValue bytes.
//
// A fact that cannot be read is not an error: Facts.Unavailable says, per field, why
// ("kernel": "reading /proc/sys/kernel/osrelease: ..."), and Read always returns. Nothing
// here prints.
package host
