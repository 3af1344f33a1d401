// Package admittest holds strangers for tests of a listener's pre-authentication: idle
// connections that never say anything, and slow ones that drip a byte a second, each
// reconnecting as soon as the listener drops it, as an attacker holding them would.
package admittest

import (
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Flood holds Idle silent and Drip slow connections against a listener.
type Flood struct {
	quit  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
	// Dials counts connections made, Drops those the listener ended.
	Dials, Drops atomic.Int64
	held         atomic.Int64
}

// Start opens idle silent and drip slow connections to addr (from local, an IP address,
// or "" for any); each reconnects when the listener drops it. Stop ends them.
func Start(addr, local string, idle, drip int) *Flood {
	f := &Flood{quit: make(chan struct{}), conns: map[net.Conn]bool{}}
	d := net.Dialer{Timeout: 5 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	for i := range idle + drip {
		slow := i >= idle
		f.wg.Go(func() { f.hold(d, addr, slow) })
	}
	return f
}

// Held is how many connections are open now.
func (f *Flood) Held() int { return int(f.held.Load()) }

// WaitHeld waits until n connections were made (each at least once), or for at most d.
func (f *Flood) WaitHeld(n int, d time.Duration) bool {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		if f.Dials.Load() >= int64(n) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (f *Flood) stopped() bool {
	select {
	case <-f.quit:
		return true
	default:
		return false
	}
}

// hold keeps one connection open, dialing again whenever it ends.
func (f *Flood) hold(d net.Dialer, addr string, slow bool) {
	buf := make([]byte, 4096)
	for !f.stopped() {
		nc, err := d.Dial("tcp", addr)
		if err != nil {
			select {
			case <-f.quit:
				return
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		f.mu.Lock()
		if f.stopped() {
			f.mu.Unlock()
			nc.Close()
			return
		}
		f.conns[nc] = true
		f.mu.Unlock()
		f.Dials.Add(1)
		f.held.Add(1)
		if slow { // a byte a second, never a whole line
			f.wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-f.quit:
						return
					case <-time.After(time.Second):
					}
					if _, err := nc.Write([]byte{"{\"v\":2,"[i%7]}); err != nil {
						return
					}
				}
			})
		}
		for { // read what the listener says until it drops us
			if _, err := nc.Read(buf); err != nil {
				break
			}
		}
		f.held.Add(-1)
		f.mu.Lock()
		delete(f.conns, nc)
		f.mu.Unlock()
		nc.Close()
		if !f.stopped() {
			f.Drops.Add(1)
		}
	}
}

// Stop closes every connection and waits for the goroutines.
func (f *Flood) Stop() {
	f.mu.Lock()
	close(f.quit)
	for nc := range f.conns {
		nc.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// RaiseFileLimit raises the process's open-file limit to n where it can (the soft limit up
// to the hard one; the hard one too where the process may, as root), and returns the
// limit it has then: a flood needs two descriptors per connection in one process.
func RaiseFileLimit(n uint64) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur >= n {
		return lim.Cur
	}
	if lim.Max < n && syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n}) == nil {
		return n
	}
	lim.Cur = lim.Max
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}
