// Package freeport finds ranges of TCP ports that are free on every interface, for tests
// and benchmarks that start listeners on a job's port range.
package freeport

import (
	"crypto/rand"
	"errors"
	"math/big"
	"net"
	"os"
	"strconv"
	"strings"
)

// Range returns n consecutive ports below the kernel's ephemeral range (see ephemeralLow)
// that were free on every interface when it looked,
// from a random base from 10000 up (tries 100 bases).
func Range(n int) ([]int, error) {
	for range 100 {
		lo, hi := 10000, ephemeralLow()-n
		b, err := rand.Int(rand.Reader, big.NewInt(int64(max(hi-lo, 1))))
		if err != nil {
			return nil, err
		}
		base := lo + int(b.Int64())
		var lns []net.Listener
		for p := base; p < base+n; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p)))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if len(lns) == n {
			ports := make([]int, n)
			for i := range ports {
				ports[i] = base + i
			}
			return ports, nil
		}
	}
	return nil, errors.New("no free port range")
}

// ephemeralLow is the first port the kernel gives outgoing connections
// (/proc/sys/net/ipv4/ip_local_port_range; 32768 where it cannot be read). Ports below it
// are never an outgoing connection's own: a dialer that retries a port before its listener
// is up can then not connect to itself (TCP's simultaneous open on loopback), which held
// the port and made the listener's bind fail with "address already in use".
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo < 11000 || lo > 65535 {
		return 32768
	}
	return lo
}
