package admit

import (
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// pair is a connection accepted from a dialer at local (a loopback address).
func pair(t *testing.T, ln net.Listener, local string) (server, client net.Conn) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	client, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

// When the gate is full, the address with the most waiting gives one up: its oldest silent
// connection before its oldest slow one; another address's connection is left alone, and
// a connection that passed is no longer the gate's.
func TestGateEvictsSilentOldestOfTheBusiestAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	g := New(Config{Max: 4})
	other, otherC := pair(t, ln, "127.0.0.3")
	g.Admit(other)
	s1, c1 := pair(t, ln, "127.0.0.2")
	a1 := g.Admit(s1)
	if _, err := c1.Write([]byte("x")); err != nil { // a1 speaks: slow, not silent
		t.Fatal(err)
	}
	if _, err := a1.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	s2, c2 := pair(t, ln, "127.0.0.2")
	g.Admit(s2)
	s3, c3 := pair(t, ln, "127.0.0.2")
	a3 := g.Admit(s3)
	if !a3.Pass() {
		t.Fatal("a connection the gate holds did not pass")
	}
	s4, c4 := pair(t, ln, "127.0.0.2")
	g.Admit(s4)
	if g.Waiting() != 4 || g.Evicted() != 0 {
		t.Fatalf("waiting %d, evicted %d; want 4, 0", g.Waiting(), g.Evicted())
	}
	s5, c5 := pair(t, ln, "127.0.0.2")
	g.Admit(s5) // full: 127.0.0.2 has 3 waiting, its oldest silent one (c2) goes
	if !closed(c2) || closed(c1) || closed(otherC) || closed(c3) || closed(c4) || closed(c5) {
		t.Fatal("the wrong connection made room")
	}
	s6, c6 := pair(t, ln, "127.0.0.2")
	g.Admit(s6) // c4 goes (silent), then the slow c1 would be last
	if !closed(c4) || closed(c1) || closed(c6) {
		t.Fatal("a silent connection should go before a slow one")
	}
	if g.Waiting() != 4 || g.Evicted() != 2 {
		t.Errorf("waiting %d, evicted %d; want 4, 2", g.Waiting(), g.Evicted())
	}
}

// A connection that spoke and is not through by Deadline is closed; a silent one is held
// while there is room, and closed with the gate. In a synctest bubble, over net.Pipe: the
// gate's timers run on its fake clock.
func TestGateDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const deadline = 400 * time.Millisecond
		g := New(Config{Max: 8, FirstByte: 100 * time.Millisecond, Deadline: deadline})
		silent, silentC := pipe(t)
		g.Admit(silent)
		slow, slowC := pipe(t)
		a := g.Admit(slow)
		go func() { _, _ = slowC.Write([]byte("{")) }()
		if _, err := a.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(deadline - time.Millisecond)
		synctest.Wait()
		if closedNow(slowC) {
			t.Error("a connection that spoke was closed before its Deadline")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !closedNow(slowC) {
			t.Error("a slow connection outlived Deadline")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if closedNow(silentC) {
			t.Error("a silent connection was closed while the gate had room")
		}
		if g.Waiting() != 1 {
			t.Errorf("%d wait, want 1", g.Waiting())
		}
		g.Close()
		if !closedNow(silentC) || g.Waiting() != 0 {
			t.Error("a silent connection outlived the gate")
		}
		late, lateC := pipe(t)
		g.Admit(late)
		if !closedNow(lateC) {
			t.Error("a connection admitted after Close was kept")
		}
	})
}

// pipe is a connection in memory (net.Pipe): the server's end and the client's.
func pipe(t *testing.T) (server, client net.Conn) {
	server, client = net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// closedNow reports whether the other end of c has closed, without waiting: a read whose
// deadline has passed says io.EOF if it has, a timeout if not.
func closedNow(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now())
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

// A peer dropped before its answer redials quickly QuickRedials times in a row, then backs
// off; any other failure doubles the wait up to Max.
func TestRedial(t *testing.T) {
	r := Redial{Backoff: 50 * time.Millisecond, Max: 200 * time.Millisecond}
	for i := range QuickRedials {
		if w := r.Next(true); w < QuickRedial || w >= 2*QuickRedial {
			t.Fatalf("quick round %d waits %v", i, w)
		}
	}
	for i, want := range []time.Duration{50, 100, 200, 200} {
		dropped := i == 0 // the 65th drop in a row backs off too
		if w := r.Next(dropped); w != want*time.Millisecond {
			t.Fatalf("round %d waits %v, want %v", i, w, want*time.Millisecond)
		}
	}
	if w := r.Next(true); w >= 2*QuickRedial {
		t.Fatalf("a drop after a backoff waits %v: quick again", w)
	}
}
