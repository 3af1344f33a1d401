// Package jobchan is a job's control channel: the authenticated TCP connections between
// rank 0 (the Leader) and every other rank (a Worker), opened when the job starts and kept
// until it ends.
//
// Over it the ranks meet at barrier phases (a worker arrives, rank 0 releases every worker
// at once with data, e.g. the image id), a worker reports a failure, and rank 0 aborts the
// job with a reason and an exit code that every rank, now or joining later, receives.
//
// Every message is a JSON line signed with HMAC-SHA256 under the job's secret and bound to
// one job attempt and one connection; see wire.go for the framing and checks. The package
// never prints: it logs through the slog.Logger in Config.
package jobchan
