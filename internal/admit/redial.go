package admit

import (
	"math/rand/v2"
	"time"
)

// Redial is the dial policy of a peer that a gate may drop before its handshake ends (a
// job channel worker, a stream predecessor): dropped after it connected, it redials after
// QuickRedial and up to as much again at random, QuickRedials rounds in a row, before it
// backs off: the gate drops the oldest waiting connection when strangers crowd it, and the
// peer's wait must not grow with theirs. Any other failed round doubles the wait, from the
// first Backoff up to Max. The zero value is not ready: set Backoff and Max.
type Redial struct {
	Backoff, Max time.Duration
	drops        int // rounds in a row where the peer was dropped before the answer
}

// Redial's quick rounds.
const (
	QuickRedial  = 10 * time.Millisecond
	QuickRedials = 64
)

// Next is how long to wait before the next dial, after a round that failed; dropped says
// whether the listener dropped the connection before its answer.
func (r *Redial) Next(dropped bool) time.Duration {
	if dropped && r.drops < QuickRedials {
		r.drops++
		return QuickRedial + time.Duration(rand.Int64N(int64(QuickRedial)))
	}
	r.drops = 0
	wait := r.Backoff
	r.Backoff = min(r.Backoff*2, r.Max)
	return wait
}
