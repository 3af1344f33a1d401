// Package fanout streams bytes rank to rank over TCP: rank 0 sends a stream (an image's
// docker-archive, in benchctl) down a chain of the job's ranks, and every other rank hands
// what it receives to its sink while it passes it on, without a shared filesystem. It knows
// nothing of Docker or of images: image feeds it `docker save` (or a cache tar) and gives it
// a sink that loads (image/stream.go). It never prints; progress goes to Config.Progress.
//
// # Contract
//
//   - Every rank of a job passes the same Config (Job, World, Hosts, Ports, Secret,
//     FrameSize); only Rank differs.
//   - Rank 0 calls Send. Send reads Source.R (to its end, unless the stream fails first) but never closes it: the caller
//     does, after Send returns. Source.R's Read must return when the context ends.
//   - Every rank > 0 calls Listen early (before rank 0 can start sending), then Receive once
//     with its sink (or nil: forward only). Receive closes the Receiver when it returns; a
//     second call returns an error. Close is idempotent and may be called instead of, or
//     after, Receive (a rank that gives up before it receives).
//   - The sink is given a reader it must read until it fails or ends, and return; it does
//     not close it. The reader ends with io.EOF only after the whole stream arrived and its
//     checksum matched; a cut or damaged stream makes Read fail, so a loader never sees a
//     complete corrupt stream. A sink that stops reading stalls the whole chain
//     (back-pressure): bound the context.
//   - A failure anywhere ends the stream on every rank still working, each with an *Error
//     naming the rank where it began. A rank whose part was done returns nil.
//
// # Files
//
// fanout.go holds the API; wire.go the protocol; listen.go and link.go the two ends of a
// connection; run.go one rank's run and its failures; pipe.go and dispatch.go its pipeline;
// forward.go the side towards the successor and sink.go the sink's reader. Figures:
// docs/PERFORMANCE.md, "Image fan-out" (go run ./bench/fanout).
//
// # Design
//
// Topology: a chain 0 -> 1 -> ... -> N-1. Every rank receives the image once and sends it
// at most once, so every link and every NIC carries it exactly once, and the chain
// pipelines: the last rank has the last byte after one transfer T plus N-1 hop latencies h.
// A tree of fan-out k is log_k(N) hops deep, but its inner ranks send k copies through one
// NIC, so it takes about k·T: the chain wins while (N-1)·h < (k-1)·T. Loopback cannot show
// the NIC side of that (every rank there shares the same CPUs, and a tree moves the same
// bytes through them); it measures h: 0.2-0.5 ms per hop with 256 KiB frames, 1.5 ms with
// 1 MiB frames. On 10 GbE (T ≈ 0.9 s for 1 GiB, h ≈ 0.2 ms on the wire + 0.2 ms of hashing)
// the chain is ahead of a binary tree up to about 2,000 ranks, and further for bigger
// images; it is also the simpler thing to keep back-pressured and to fail cleanly.
//
// Frames of 256 KiB (FrameSize): a rank must have a whole frame to check its MAC before it
// forwards it (forwarding unchecked bytes would sign a forgery for the successor), so h
// grows with the frame; 256 KiB costs within a few per cent of 1 MiB's CPU per byte (the
// per-frame overhead is small next to hashing) at a quarter of the latency.
//
// Per rank, in stages joined by small bounded queues: a reader takes frames off the
// predecessor's connection (rank 0: off its source) into buffers from a bounded pool; two
// hashers compute each frame's SHA-256 (the costly step, and frames are independent); a
// dispatcher, in order, checks each frame's MAC, keeps the image's XXH64 and hands the frame
// both to the forwarder (Queue = 8 frames to the successor) and to the sink (8 more to the
// loader). A buffer goes back to the pool when both are done with it. When either side is
// slow its queue fills, the dispatcher waits, the reader stops reading and TCP pushes back
// on the predecessor: the slowest sink sets the pace of the chain, and a rank holds at most
// poolFrames (28 frames, 7 MiB by default; 5 MiB measured) whatever the image's size.
// Nothing waits on itself: every stage drains its input to its end, also after a failure.
//
// Integrity: the sink's reader holds back the newest 1 MiB (at least; a docker-archive ends
// in 1 KiB of zeros) until the trailer's XXH64 matches what this rank computed, so a cut or
// damaged stream makes the loader's read fail and never reaches it whole; forwarding does
// not wait for that (the successor checks for itself).
//
// Authentication, as the job channel: a connection counts only after a handshake that both
// sides sign with the job secret over the job, both ranks and a nonce from each side; each
// frame then carries an HMAC-SHA256 over its sequence number, type, length and content's
// SHA-256 under a key derived from all of that, one key per direction, so frames cannot be
// injected, replayed or reordered. A relay computes a frame's SHA-256 once and uses it both
// to check the frame and to sign it for its successor: one pass of SHA-256 per byte per
// rank (1.65 GB/s per core here, with SHA-NI; XXH64 18 GB/s) where MACing the payload
// itself would take two. AES-GCM as a MAC runs at 7.4 GB/s here but needs a nonce never
// reused under a key, which a relay's own abort frames would make easy to get wrong.
//
// Failure: a failure ends the stream. The rank where it is seen sends an abort frame down
// and a fail frame up (each naming the rank it began on, and why), every rank still working
// ends with a *Error naming that rank, and their loaders' reads fail (never a clean
// EOF). A rank whose part was done (its image verified and fed, its successor's
// acknowledgement in) returns nil. Ports: each receiver listens on the first free port of
// the job's range; its predecessor tries every port of the range on its host until a
// handshake says it is the rank it wants (a listener of another rank refuses, naming
// itself), with backoff, until ConnectTimeout.
package fanout
