package jobchan

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
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
// instead of their JSON (see macWith).
const protocolVersion = 3

// maxMessage bounds one message line, newline included. Every message this package sends
// fits: reasons are cut to MaxReason and data values to maxValue.
const maxMessage = 64 << 10

// maxValue bounds one value of a message's data (image ids, refs and keys are far shorter).
const maxValue = 4 << 10

// message is one line of the protocol. Every message carries the MAC of all its other
// fields under the job secret. Session binds it to one connection (the leader's nonce
// in the hello and the join, then both nonces), Rank binds it to the worker's rank, and
// Seq, strictly increasing per direction, stops replays within the connection.
type message struct {
	V        int               `json:"v"`
	Job      string            `json:"job"`
	Type     string            `json:"type"`
	Rank     int               `json:"rank"`
	Host     string            `json:"host,omitempty"`
	PID      int               `json:"pid,omitempty"`
	Instance string            `json:"instance,omitempty"`
	Nonce    string            `json:"nonce,omitempty"`
	Phase    string            `json:"phase,omitempty"`
	Session  string            `json:"session"`
	Seq      uint64            `json:"seq"`
	Data     map[string]string `json:"data,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	MAC      string            `json:"mac,omitempty"`
}

func (m *message) mac(secret []byte) string {
	return m.macWith(hmac.New(sha256.New, secret))
}

// macWith is the message's MAC with h, an HMAC-SHA256 under the job secret (reset here: a
// connection keeps one per direction). It covers every field but MAC in a canonical
// binary form (each string with its length, the data sorted by key), which costs far less
// than encoding the message a second time.
func (m *message) macWith(h hash.Hash) string {
	bp := macBufs.Get().(*[]byte)
	b := (*bp)[:0]
	b = binary.BigEndian.AppendUint64(b, uint64(m.V))
	for _, f := range []string{m.Job, m.Type, m.Host, m.Instance, m.Nonce, m.Phase, m.Session, m.Reason} {
		b = appendString(b, f)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(int64(m.Rank)))
	b = binary.BigEndian.AppendUint64(b, uint64(int64(m.PID)))
	b = binary.BigEndian.AppendUint64(b, m.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(len(m.Data)))
	if len(m.Data) > 0 {
		keys := make([]string, 0, len(m.Data))
		for k := range m.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendString(appendString(b, k), m.Data[k])
		}
	}
	h.Reset()
	h.Write(b)
	var sum [sha256.Size]byte
	out := hex.EncodeToString(h.Sum(sum[:0]))
	*bp = b
	macBufs.Put(bp)
	return out
}

// macBufs are the buffers macWith encodes into.
var macBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint64(b, uint64(len(s))), s...)
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
	case <-time.After(timeout):
		return errors.New("timed out waiting to send")
	}
	defer func() { <-c.wmu }()
	m.Reason = truncate(m.Reason, MaxReason)
	m.Data = capValues(m.Data)
	c.sendSeq++
	m.V, m.Job, m.Session, m.Seq = protocolVersion, c.job, c.session, c.sendSeq
	if c.bound {
		m.Rank = c.rank
	}
	m.MAC = m.macWith(c.sendMAC)
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(line)+1 > maxMessage {
		return fmt.Errorf("%s message of %d bytes is over the protocol's %d", m.Type, len(line)+1, maxMessage)
	}
	_ = c.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err = c.c.Write(append(line, '\n'))
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

// recv reads and checks one message: MAC, job, session, rank, sequence.
func (c *conn) recv(deadline time.Time) (message, error) {
	var m message
	_ = c.c.SetReadDeadline(deadline)
	line, err := c.readLine()
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, &authError{"not a job channel message"}
	}
	if m.V != protocolVersion {
		return m, &authError{fmt.Sprintf("protocol version %d (this benchctl speaks %d; use the same benchctl on every node)", m.V, protocolVersion)}
	}
	if !hmac.Equal([]byte(m.MAC), []byte(m.macWith(c.recvMAC))) {
		return m, &authError{"bad MAC (a different job secret, or a forged message)"}
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
