package jobchan

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// heartbeats sends rank 0's heartbeat to every worker once a period and declares lost the
// workers that have been silent for the lost timeout, until Close.
func (l *Leader) heartbeats() {
	period := l.cfg.heartbeat()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-tick.C:
		}
		l.mu.Lock()
		conns := l.connsLocked()
		l.mu.Unlock()
		l.broadcast(conns, message{Type: msgBeat}, period)
		l.checkLost(l.cfg.now())
	}
}

// checkLost declares lost every worker that joined, did not say goodbye, and has not been
// heard from (or has not reconnected) for the lost timeout at now; rank 0 then aborts the
// job naming them.
func (l *Leader) checkLost(now time.Time) {
	limit := l.timeout()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	var newly []LostRank
	for r, t := range l.seen {
		if _, done := l.lost[r]; done || l.left[r] || now.Sub(t) <= limit {
			continue
		}
		why := fmt.Sprintf("silent for %s (heartbeat every %s)", now.Sub(t).Round(time.Second), l.cfg.heartbeat())
		if d, ok := l.dropped[r]; ok {
			why = fmt.Sprintf("%s and not back within %s", d, limit)
		}
		lr := LostRank{Rank: r, Host: l.cfg.host(r), LastSeen: t, Why: why}
		l.lost[r] = lr
		if p := l.peers[r]; p != nil {
			delete(l.peers, r)
			p.c.c.Close()
		}
		newly = append(newly, lr)
	}
	if len(newly) > 0 {
		l.notify()
	}
	l.mu.Unlock()
	if len(newly) == 0 {
		return
	}
	sort.Slice(newly, func(i, j int) bool { return newly[i].Rank < newly[j].Rank })
	names := make([]string, len(newly))
	for i, lr := range newly {
		l.cfg.logger().Error("job channel: "+lr.String(), "rank", lr.Rank, "host", lr.Host)
		names[i] = lr.String()
	}
	l.failed(TruncateReason(short(names)), 1)
}

// beats sends this worker's heartbeat once a period and ends supervision with a
// *LostError when rank 0 has been silent for the lost timeout.
func (w *Worker) beats() {
	period := w.cfg.heartbeat()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		c := w.c
		w.mu.Unlock()
		if c != nil {
			_ = c.send(message{Type: msgBeat}, period)
		}
		w.checkLost(w.cfg.now())
	}
}

// checkLost ends supervision with a *LostError if the parent (rank 0, or the group's relay)
// has been silent for the lost timeout at now.
func (w *Worker) checkLost(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed || w.ended {
		return
	}
	silent := now.Sub(w.lastSeen)
	if silent <= w.cfg.LostTimeout() {
		return
	}
	why := fmt.Sprintf("silent for %s (heartbeat every %s)", silent.Round(time.Second), w.cfg.heartbeat())
	if w.dropped != "" {
		why = fmt.Sprintf("%s and not back within %s", w.dropped, w.cfg.LostTimeout())
	}
	w.endLocked(&LostError{Rank: w.parent, Host: w.cfg.host(w.parent), LastSeen: w.lastSeen, Why: strings.TrimSpace(why)})
}
