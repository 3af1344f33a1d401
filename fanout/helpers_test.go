package fanout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/benchctl/benchctl/internal/freeport"
)

// freePorts finds n consecutive ports that are free on every interface (the fan-out's
// receivers listen on all of them, as the job channel does).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freeport.Range(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// chainConfigs are the configurations of a job of world ranks, all on 127.0.0.1.
func chainConfigs(t testing.TB, world int, tweak func(*Config)) []Config {
	ports := freePorts(t, world+2)
	hosts := make([]string, world)
	for i := range hosts {
		hosts[i] = "127.0.0.1"
	}
	cfgs := make([]Config, world)
	for r := range cfgs {
		cfgs[r] = Config{Job: "4242.0", Rank: r, World: world, Hosts: hosts, Ports: ports, Secret: []byte("s3cret-of-the-job"),
			ConnectTimeout: 10 * time.Second}
		if tweak != nil {
			tweak(&cfgs[r])
		}
	}
	return cfgs
}

// capture is a sink that reads everything and records how its reader ended.
type capture struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	readErr error // what ended the reads: nil for a clean EOF
	done    bool
	delay   time.Duration // sleep per read (a slow engine)
	failAt  int64         // return an error after this many bytes (0: never)
	atEOF   func()        // if not nil, called when the reader ends with io.EOF
}

// len is how many bytes the sink has read so far.
func (c *capture) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Len()
}

func (c *capture) sink(r io.Reader) error {
	p := make([]byte, 64<<10)
	for {
		n, err := r.Read(p)
		c.mu.Lock()
		c.buf.Write(p[:n])
		size := int64(c.buf.Len())
		c.mu.Unlock()
		if c.failAt > 0 && size >= c.failAt {
			return errors.New("no space left on device")
		}
		if err != nil {
			c.mu.Lock()
			c.done = true
			if err != io.EOF {
				c.readErr = err
			}
			c.mu.Unlock()
			if err == io.EOF {
				if c.atEOF != nil {
					c.atEOF()
				}
				return nil
			}
			return err
		}
		if c.delay > 0 {
			time.Sleep(c.delay)
		}
	}
}

// cleanEOF reports whether the sink's reader ended with io.EOF.
func (c *capture) cleanEOF() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done && c.readErr == nil
}

// outcome is one rank's return.
type outcome struct {
	res Result
	err error
	at  time.Duration // since the start of the chain
}

// runChain runs a whole chain: receivers listen (after listenDelay(rank), if set), then
// receive with their sink (nil entries forward only); rank 0 sends data.
func runChain(ctx context.Context, t *testing.T, cfgs []Config, src Source, sinks []func(io.Reader) error,
	listenDelay func(rank int) time.Duration) []outcome {
	t.Helper()
	out := make([]outcome, len(cfgs))
	start := time.Now()
	var wg sync.WaitGroup
	for r := 1; r < len(cfgs); r++ {
		wg.Go(func() {
			if listenDelay != nil {
				time.Sleep(listenDelay(r))
			}
			rc, err := Listen(cfgs[r])
			if err != nil {
				out[r] = outcome{err: err, at: time.Since(start)}
				return
			}
			res, err := rc.Receive(ctx, sinks[r])
			out[r] = outcome{res, err, time.Since(start)}
		})
	}
	res, err := Send(ctx, cfgs[0], src)
	out[0] = outcome{res, err, time.Since(start)}
	wg.Wait()
	return out
}

func xxhHex(b []byte) string { return fmt.Sprintf("%016x", xxhash.Sum64(b)) }

// noLeaks fails the test if goroutines started during it are still running at its end
// (waiting a little for the ones on their way out).
func noLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(time.Minute) // on time, milliseconds: this only catches a leak
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}

// connWrap is a fault on a connection: after `after` bytes written, it flips one byte
// (flip) or closes the connection (cut).
type connWrap struct {
	net.Conn
	mu      sync.Mutex
	written int64
	after   int64
	flip    bool
	done    bool
}

func (c *connWrap) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || c.written+int64(len(p)) <= c.after {
		c.written += int64(len(p))
		return c.Conn.Write(p)
	}
	k := c.after - c.written
	c.done = true
	if c.flip {
		q := append([]byte(nil), p...)
		q[k] ^= 0x40
		c.written += int64(len(p))
		return c.Conn.Write(q)
	}
	n, _ := c.Conn.Write(p[:k])
	c.Conn.Close()
	return n, errors.New("cut by the test")
}
