package jobchan

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"slices"
	"strings"
	"time"
)

// Message types of the protocol.
const (
	msgHello   = "hello"   // leader -> worker: the leader's nonce
	msgJoin    = "join"    // worker -> leader: rank, host, pid, instance and the worker's nonce
	msgWelcome = "welcome" // leader -> worker: joined
	msgRefuse  = "refuse"  // leader -> worker: not joined, with the reason (another process holds the rank)
	msgArrive  = "arrive"  // worker -> leader: reached a phase
	msgRelease = "release" // leader -> worker: a phase is released, with data
	msgAbort   = "abort"   // leader -> worker: the job is aborted, with a reason
	msgFail    = "fail"    // worker -> leader: this node failed, with a reason
	msgBeat    = "beat"    // both ways: alive
	msgEnd     = "end"     // leader -> worker: rank 0 is done; supervision is over
	msgBye     = "bye"     // worker -> leader: done, closing (not lost)
)

// protocolVersion 2: both sides contribute a nonce, messages are bound to the worker's
// rank, heartbeats and the end message. 3: the MAC covers a binary form of the fields
// instead of their JSON. 4: a message is a frame of a JSON header with the version and a
// binary body, its MAC checked before anything else is read (see codec.go).
const protocolVersion = 4

// maxMessage bounds one message's body, and a header line (or an earlier protocol's
// message line), newline included. Every message this package sends fits: reasons are
// cut to MaxReason and data values to maxValue.
const maxMessage = 64 << 10

// maxValue bounds one value of a message's data (image ids, refs and keys are far shorter).
const maxValue = 4 << 10

// message is one message of the protocol; codec.go puts it on the wire, with the MAC of
// all its fields under the job secret. Session binds it to one connection (the leader's
// nonce in the hello and the join, then both nonces), Rank binds it to the worker's rank,
// and Seq, strictly increasing per direction, stops replays within the connection.
type message struct {
	V        int
	Job      string
	Type     string
	Rank     int
	Host     string
	PID      int
	Instance string
	Nonce    string
	Phase    string
	Session  string
	Seq      uint64
	Data     map[string]string
	Reason   string
}

// conn is one authenticated connection, used by one reader and any number of writers.
type conn struct {
	c       net.Conn
	r       *bufio.Reader
	secret  []byte
	job     string
	session string
	// rank is the worker rank this connection belongs to, once bound (after the join):
	// every message must carry it.
	rank    int
	bound   bool
	sendSeq uint64
	recvSeq uint64
	wmu     chanMutex
	sendMAC hash.Hash // under wmu
	recvMAC hash.Hash // the one reader's
}

// chanMutex is a mutex whose lock can give up (writers must not block forever).
type chanMutex chan struct{}

func newConn(c net.Conn, secret []byte, job string) *conn {
	return &conn{c: c, r: bufio.NewReaderSize(c, 4096), secret: secret, job: job, wmu: make(chanMutex, 1),
		sendMAC: hmac.New(sha256.New, secret), recvMAC: hmac.New(sha256.New, secret)}
}

// bind makes the connection the given worker rank's, in a session of both nonces.
func (c *conn) bind(rank int, leaderNonce, workerNonce string) {
	c.rank, c.bound = rank, true
	c.session = leaderNonce + "." + workerNonce
}

// send signs and writes a message. A reason or data value too long for one message is cut
// (reasons should have been cut where they were made, with TruncateReason).
func (c *conn) send(m message, timeout time.Duration) error {
	select {
	case c.wmu <- struct{}{}:
	default: // another writer: wait for it, within the timeout
		t := time.NewTimer(timeout)
		select {
		case c.wmu <- struct{}{}:
			t.Stop()
		case <-t.C:
			return errors.New("timed out waiting to send")
		}
	}
	defer func() { <-c.wmu }()
	m.Reason = truncate(m.Reason, MaxReason)
	m.Data = capValues(m.Data)
	c.sendSeq++
	m.V, m.Job, m.Session, m.Seq = protocolVersion, c.job, c.session, c.sendSeq
	if c.bound {
		m.Rank = c.rank
	}
	bp := frameBufs.Get().(*[]byte)
	frame := m.appendFrame((*bp)[:0], c.sendMAC)
	defer func() {
		if cap(frame) <= 16<<10 { // a long reason's buffer is not kept
			*bp = frame
			frameBufs.Put(bp)
		}
	}()
	if body := len(frame) - bytes.IndexByte(frame, '\n') - 1; body > maxMessage {
		return fmt.Errorf("%s message of %d bytes is over the protocol's %d", m.Type, body, maxMessage)
	}
	_ = c.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.c.Write(frame)
	return err
}

// capValues returns d, or a copy with each value longer than maxValue cut.
func capValues(d map[string]string) map[string]string {
	long := false
	for _, v := range d {
		long = long || len(v) > maxValue
	}
	if !long {
		return d
	}
	out := make(map[string]string, len(d))
	for k, v := range d {
		out[k] = truncate(v, maxValue)
	}
	return out
}

// authError is a message that failed authentication; the peer is not trusted.
type authError struct{ why string }

func (e *authError) Error() string { return "rejected message: " + e.why }

// kind is the reason without what the peer chose (a version, a job id, a number): a key
// for rate-limited warnings that a stranger cannot multiply.
func (e *authError) kind() string {
	if i := strings.IndexAny(e.why, "0123456789\"("); i > 0 {
		return e.why[:i]
	}
	return e.why
}

// readLine reads one line of at most maxMessage bytes through the connection's small
// buffer (a long line is put together from its pieces).
func (c *conn) readLine() ([]byte, error) {
	var long []byte
	for {
		frag, err := c.r.ReadSlice('\n')
		switch {
		case err == nil && long == nil:
			return frag, nil
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
			if len(long)+len(frag) > maxMessage {
				return nil, &authError{fmt.Sprintf("message too long (over %d bytes)", maxMessage)}
			}
			long = append(long, frag...)
			if err == nil {
				return long, nil
			}
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// readBody reads a body of n bytes: in place from the read buffer when it fits (the
// caller discards it once decoded), else into memory that grows as the bytes arrive, so
// that a stranger who announces a long body and sends little costs little.
func (c *conn) readBody(n int) ([]byte, error) {
	if n <= c.r.Size() {
		b, err := c.r.Peek(n)
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return b, err
	}
	var b []byte
	for len(b) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(n-len(b), max(len(b), 4096)))
		}
		k, err := c.r.Read(b[len(b):min(n, cap(b))])
		b = b[:len(b)+k]
		if err != nil && len(b) < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}

// recv reads and checks one message: MAC, job, session, rank, sequence.
func (c *conn) recv(deadline time.Time) (message, error) {
	var m message
	_ = c.c.SetReadDeadline(deadline)
	line, err := c.readLine()
	if err != nil {
		return m, err
	}
	n, err := bodyLen(line)
	if err != nil {
		return m, err
	}
	body, err := c.readBody(n)
	if err != nil {
		return m, err
	}
	if err := decodeBody(body, c.recvMAC, c.job, c.session, &m); err != nil {
		return m, err
	}
	if n <= c.r.Size() { // read in place (readBody)
		_, _ = c.r.Discard(n)
	}
	if m.Job != c.job {
		return m, &authError{fmt.Sprintf("message for job %q, this is job %q", m.Job, c.job)}
	}
	if c.session != "" && m.Session != c.session {
		return m, &authError{"message from another session (replayed?)"}
	}
	if c.bound && m.Rank != c.rank {
		return m, &authError{fmt.Sprintf("message for rank %d on rank %d's connection (replayed?)", m.Rank, c.rank)}
	}
	if m.Seq <= c.recvSeq {
		return m, &authError{fmt.Sprintf("sequence %d after %d (replayed?)", m.Seq, c.recvSeq)}
	}
	c.recvSeq = m.Seq
	return m, nil
}

func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// validNonce is 32 lower-case hex digits, as nonce makes them.
func validNonce(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
