// Package jobchan is a job's control channel: the authenticated TCP connections between
// rank 0 (the Leader) and every other rank (a Worker), opened when the job starts and kept
// until it ends.
//
// Over it the ranks meet at barrier phases (a worker arrives, rank 0 releases every worker
// at once with data, e.g. the image id), a worker reports a failure, and rank 0 aborts the
// job with a reason and an exit code that every rank, now or joining later, receives.
// Heartbeats go both ways (Config.Heartbeat); a peer silent for LostAfter periods is lost:
// rank 0 aborts the job naming it, a worker ends with a *LostError (see Worker.Done).
//
// Jobs of more than Config.FanOut (64) workers are a two-level tree: the first rank of each
// group of 64 is a relay that the rest of its group connects to, and only relays connect to
// rank 0. A relay gathers its group's arrivals, passes releases and aborts down and its
// group's failures and losses up, whole. So no process holds more than about 64
// connections: a 4,096-node job meets where a process may open only 4,096 files, and rank
// 0's heartbeats cost 0.15 % of a core instead of 4.4 % (docs/PERFORMANCE.md).
//
// Every message is a frame of at most 64 KiB: a JSON header line with the protocol version
// and the length, then the fields in binary, signed with HMAC-SHA256 under the job's secret
// (checked before any field is read), bound to one job attempt, one connection (both sides
// contribute a nonce) and the worker's rank, and numbered; see wire.go and codec.go. Until a
// connection has authenticated it waits in a gate (internal/admit), so that strangers on
// the network cannot keep the job's ranks out: rank 0 and the relays accept continuously,
// and a worker dropped before its welcome redials at once. Reasons are cut to MaxReason where they are
// made (TruncateReason). The package never prints: it logs through Config.Log, repeated
// warnings at most once per 10 s.
package jobchan
