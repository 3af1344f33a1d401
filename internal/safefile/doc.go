// Package safefile opens files that come from places benchctl does not control — the
// shared job folder, which containers write into, and paths a user names — so that no
// such file can hang, mislead or exhaust a reader:
//
//   - a FIFO, socket or device is refused, never opened for reading (the open itself is
//     non-blocking, so a FIFO without a writer cannot block it);
//   - reads are bounded: a file over the caller's limit is a *TooLargeError;
//   - inside a folder (a node folder), a path is resolved beneath it: no component may lead
//     outside through a symbolic link (openat2 RESOLVE_BENEATH where the kernel has it,
//     else every component is opened without following links), and the file itself must
//     not be a link.
package safefile
