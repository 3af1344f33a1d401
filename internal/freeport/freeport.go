// Package freeport finds ranges of TCP ports that are free on every interface, for tests
// and benchmarks that start listeners on a job's port range.
package freeport

import (
	"crypto/rand"
	"errors"
	"math/big"
	"net"
	"strconv"
)

// Range returns n consecutive ports that were free on every interface when it looked,
// from a random base in 20000-49999 (tries 100 bases).
func Range(n int) ([]int, error) {
	for range 100 {
		b, err := rand.Int(rand.Reader, big.NewInt(30000))
		if err != nil {
			return nil, err
		}
		base := 20000 + int(b.Int64())
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
