package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchctl/benchctl/models/internal/example"
)

// Rendezvous protocol, one text line each way on a TCP connection to rank 0 at
// MASTER_ADDR:MASTER_PORT:
//
//	worker -> rank 0:  BCAR1 REGISTER <rank> <nnodes> <ring port>
//	rank 0 -> worker:  BCAR1 PEERS <addr of rank 0> ... <addr of rank n-1>
//	               or  BCAR1 ERROR <message>
//
// Rank 0 sends PEERS once every rank has registered. A worker's address is the IP its
// registration came from and the ring port it sent; rank 0's is MASTER_ADDR.
const (
	magic        = "BCAR1"
	shortTimeout = 10 * time.Second // for one registration line, reply or ring hello
)

// logFunc prints a progress line.
type logFunc func(format string, args ...any)

// rendezvous returns every rank's ring address, in rank order.
func rendezvous(e example.NodeEnv, ringPort int, timeout time.Duration, logf logFunc) ([]string, error) {
	if e.Rank == 0 {
		return serveTable(e, ringPort, timeout, logf)
	}
	return register(e, ringPort, timeout, logf)
}

// serveTable is rank 0's side: it waits up to timeout for the other ranks to register and
// sends them the table. It listens on MASTER_PORT on every interface, so that the workers
// reach it whatever address MASTER_ADDR resolves to on rank 0's own node.
func serveTable(e example.NodeEnv, ringPort int, timeout time.Duration, logf logFunc) ([]string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(e.MasterPort)))
	if err != nil {
		return nil, fmt.Errorf("rank 0 cannot listen on MASTER_PORT: %w", err)
	}
	defer ln.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(timeout))
	logf("waiting for %d ranks to register on port %d", e.NNodes-1, e.MasterPort)
	table := make([]string, e.NNodes)
	table[0] = net.JoinHostPort(e.MasterAddr, strconv.Itoa(ringPort))
	conns := make([]net.Conn, e.NNodes)
	defer func() {
		for _, c := range conns[1:] {
			if c != nil {
				c.Close()
			}
		}
	}()
	for left := e.NNodes - 1; left > 0; {
		c, err := ln.Accept()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s waiting for ranks %s to register", timeout, missing(table))
		} else if err != nil {
			return nil, fmt.Errorf("waiting for ranks %s to register: %w", missing(table), err)
		}
		rank, addr, err := readRegistration(c, e.NNodes)
		if err == nil && conns[rank] != nil {
			err = fmt.Errorf("rank %d is already registered, from %s", rank, table[rank])
		}
		if err != nil {
			logf("rejecting a registration from %s: %v", c.RemoteAddr(), err)
			sendLine(c, magic+" ERROR "+err.Error())
			c.Close()
			continue
		}
		conns[rank], table[rank] = c, addr
		left--
		logf("rank %d registered, ring address %s (%d to go)", rank, addr, left)
	}
	msg := magic + " PEERS " + strings.Join(table, " ")
	for r := 1; r < e.NNodes; r++ {
		if err := sendLine(conns[r], msg); err != nil {
			return nil, fmt.Errorf("sending the address table to rank %d: %w", r, err)
		}
	}
	return table, nil
}

// readRegistration reads a worker's REGISTER line; it returns the rank and ring address.
func readRegistration(c net.Conn, nnodes int) (int, string, error) {
	c.SetReadDeadline(time.Now().Add(shortTimeout))
	f, err := readFields(c)
	if err != nil {
		return 0, "", err
	}
	if len(f) != 5 || f[0] != magic || f[1] != "REGISTER" {
		return 0, "", fmt.Errorf("not a registration: %q", strings.Join(f, " "))
	}
	rank, err1 := strconv.Atoi(f[2])
	n, err2 := strconv.Atoi(f[3])
	port, err3 := strconv.Atoi(f[4])
	switch {
	case err1 != nil || err2 != nil || err3 != nil || port < 1 || port > 65535:
		return 0, "", fmt.Errorf("malformed registration: %q", strings.Join(f, " "))
	case n != nnodes:
		return 0, "", fmt.Errorf("rank %s has NNODES=%d, but rank 0 has NNODES=%d", f[2], n, nnodes)
	case rank < 1 || rank >= nnodes:
		return 0, "", fmt.Errorf("rank %d is not a worker rank of NNODES=%d", rank, nnodes)
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return 0, "", err
	}
	return rank, net.JoinHostPort(host, f[4]), nil
}

// register is a worker's side: it reaches rank 0, retrying until timeout, registers and
// waits (up to timeout again) for the address table.
func register(e example.NodeEnv, ringPort int, timeout time.Duration, logf logFunc) ([]string, error) {
	master := net.JoinHostPort(e.MasterAddr, strconv.Itoa(e.MasterPort))
	c, err := dialRetry(master, time.Now().Add(timeout), "rank 0", logf)
	if err != nil {
		return nil, fmt.Errorf("cannot reach rank 0 at MASTER_ADDR:MASTER_PORT %s: %w", master, err)
	}
	defer c.Close()
	if err := sendLine(c, fmt.Sprintf("%s REGISTER %d %d %d", magic, e.Rank, e.NNodes, ringPort)); err != nil {
		return nil, fmt.Errorf("registering with rank 0 at %s: %w", master, err)
	}
	logf("registered with rank 0 at %s, waiting for the other ranks", master)
	c.SetReadDeadline(time.Now().Add(timeout))
	f, err := readFields(c)
	switch {
	case err != nil:
		return nil, fmt.Errorf("waiting for the address table from rank 0: %w", err)
	case len(f) >= 2 && f[0] == magic && f[1] == "ERROR":
		return nil, fmt.Errorf("rank 0 refused the registration: %s", strings.Join(f[2:], " "))
	case len(f) != 2+e.NNodes || f[0] != magic || f[1] != "PEERS":
		return nil, fmt.Errorf("rank 0 sent a malformed address table: %q", strings.Join(f, " "))
	}
	return f[2:], nil
}

// dialRetry connects to addr, retrying with a growing pause until deadline.
func dialRetry(addr string, deadline time.Time, who string, logf logFunc) (net.Conn, error) {
	pause := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := net.DialTimeout("tcp", addr, max(min(5*time.Second, time.Until(deadline)), time.Millisecond))
		if err == nil {
			return c, nil
		}
		if time.Until(deadline) <= 0 {
			return nil, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		if attempt == 1 || attempt%10 == 0 {
			logf("waiting for %s at %s (attempt %d): %v", who, addr, attempt, err)
		}
		time.Sleep(max(min(pause, time.Until(deadline)), 0))
		pause = min(2*pause, 2*time.Second)
	}
}

// readFields reads one line of at most 64 KiB and splits it into fields.
func readFields(c net.Conn) ([]string, error) {
	line, err := bufio.NewReader(io.LimitReader(c, 64<<10)).ReadString('\n')
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("connection closed by %s", c.RemoteAddr())
		}
		return nil, err
	}
	return strings.Fields(line), nil
}

// sendLine writes s and a newline, with a deadline.
func sendLine(c net.Conn, s string) error {
	c.SetWriteDeadline(time.Now().Add(shortTimeout))
	_, err := io.WriteString(c, s+"\n")
	return err
}

// missing lists the ranks without an address.
func missing(table []string) string {
	var out []string
	for r, a := range table {
		if a == "" {
			out = append(out, strconv.Itoa(r))
		}
	}
	return strings.Join(out, ", ")
}
