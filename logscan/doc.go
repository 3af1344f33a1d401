// Package logscan judges a benchmark by its log as madengine does: a line that contains
// one of the error patterns (and none of the benign ones) makes the run a failure, even
// when the container exited 0 — a Python traceback that a wrapper script swallowed, an
// out-of-memory error a framework caught and printed. The scanner is an io.Writer that
// sees the log as it streams: memory is bounded by one line (cut at 64 KiB), whatever the
// log's size.
package logscan
