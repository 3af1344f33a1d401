package jobchan

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Message types of the barrier protocol.
const (
	msgHello   = "hello"   // leader -> worker: job and session nonce
	msgJoin    = "join"    // worker -> leader: rank and host
	msgWelcome = "welcome" // leader -> worker: joined
	msgArrive  = "arrive"  // worker -> leader: reached a phase
	msgRelease = "release" // leader -> worker: a phase is released, with data
	msgAbort   = "abort"   // leader -> worker: the job is aborted, with a reason
	msgFail    = "fail"    // worker -> leader: this node failed, with a reason
	msgBye     = "bye"     // worker -> leader: done, closing (not lost)
)

const protocolVersion = 1

// maxMessage bounds one message line.
const maxMessage = 64 << 10

// message is one line of the barrier protocol. Every message carries the MAC of all its
// other fields under the job secret; Session binds it to one connection (the leader's
// nonce) and Seq, strictly increasing per direction, stops replays within it.
type message struct {
	V       int               `json:"v"`
	Job     string            `json:"job"`
	Type    string            `json:"type"`
	Rank    int               `json:"rank"`
	Host    string            `json:"host,omitempty"`
	Phase   string            `json:"phase,omitempty"`
	Session string            `json:"session"`
	Seq     uint64            `json:"seq"`
	Data    map[string]string `json:"data,omitempty"`
	Reason  string            `json:"reason,omitempty"`
	MAC     string            `json:"mac,omitempty"`
}

func (m *message) mac(secret []byte) string {
	c := *m
	c.MAC = ""
	body, _ := json.Marshal(c)
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// conn is one authenticated connection, used by one reader and any number of writers.
type conn struct {
	c       net.Conn
	r       *bufio.Reader
	secret  []byte
	job     string
	session string
	sendSeq uint64
	recvSeq uint64
	wmu     chanMutex
}

// chanMutex is a mutex whose lock can give up (writers must not block forever).
type chanMutex chan struct{}

func newConn(c net.Conn, secret []byte, job string) *conn {
	return &conn{c: c, r: bufio.NewReaderSize(c, 4096), secret: secret, job: job, wmu: make(chanMutex, 1)}
}

// send signs and writes a message.
func (c *conn) send(m message, timeout time.Duration) error {
	select {
	case c.wmu <- struct{}{}:
	case <-time.After(timeout):
		return errors.New("timed out waiting to send")
	}
	defer func() { <-c.wmu }()
	c.sendSeq++
	m.V, m.Job, m.Session, m.Seq = protocolVersion, c.job, c.session, c.sendSeq
	m.MAC = m.mac(c.secret)
	line, _ := json.Marshal(m)
	_ = c.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.c.Write(append(line, '\n'))
	return err
}

// authError is a message that failed authentication; the peer is not trusted.
type authError struct{ why string }

func (e *authError) Error() string { return "rejected message: " + e.why }

// recv reads and checks one message: MAC, job, session, sequence.
func (c *conn) recv(deadline time.Time) (message, error) {
	var m message
	_ = c.c.SetReadDeadline(deadline)
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return m, &authError{"message too long"}
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return m, io.EOF
		}
		return m, err
	}
	if len(line) > maxMessage {
		return m, &authError{"message too long"}
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, &authError{"not a barrier message"}
	}
	if m.V != protocolVersion {
		return m, &authError{fmt.Sprintf("protocol version %d (this benchctl speaks %d)", m.V, protocolVersion)}
	}
	if !hmac.Equal([]byte(m.MAC), []byte(m.mac(c.secret))) {
		return m, &authError{"bad MAC (a different job secret, or a forged message)"}
	}
	if m.Job != c.job {
		return m, &authError{fmt.Sprintf("message for job %q, this is job %q", m.Job, c.job)}
	}
	if c.session != "" && m.Session != c.session {
		return m, &authError{"message from another session (replayed?)"}
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
