package jobchan

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// limiter logs a warning of one kind at most once per period, then says how many of the
// same kind it held back: a peer that retries in a loop must not flood the job's log.
type limiter struct {
	period time.Duration
	now    func() time.Time
	mu     sync.Mutex
	last   map[string]time.Time
	held   map[string]int
}

func newLimiter(period time.Duration, now func() time.Time) *limiter {
	return &limiter{period: period, now: now, last: map[string]time.Time{}, held: map[string]int{}}
}

// warn logs msg with args unless a warning of the same key was logged within the period.
func (l *limiter) warn(log *slog.Logger, key, msg string, args ...any) {
	l.mu.Lock()
	now := l.now()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.period {
		l.held[key]++
		l.mu.Unlock()
		return
	}
	held := l.held[key]
	l.last[key], l.held[key] = now, 0
	if len(l.last) > 4096 { // keys come from peers: bound the map
		for k, t := range l.last {
			if now.Sub(t) >= l.period {
				delete(l.last, k)
				delete(l.held, k)
			}
		}
	}
	l.mu.Unlock()
	if held > 0 {
		args = append(args, "repeated", fmt.Sprintf("%d more like it in the last %s", held, l.period))
	}
	log.Warn(msg, args...)
}
