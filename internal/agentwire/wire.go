// Package agentwire is the remote-launch agent's protocol: the frames that carry a remote
// command's request, its standard streams, signals and exit status between the agent (in
// the benchmark's container, called by an MPI launcher as it would call ssh), the node's
// benchctl, the target node's benchctl (over the job channel, each frame signed: see
// jobchan.DialStream) and the wrapper that runs the command beside the target's benchmark.
//
// A frame is a kind byte, a 4-byte big-endian length and at most MaxPayload bytes; on a
// signed link (Conn.Sign) 32 bytes of HMAC-SHA256 follow, over a per-direction sequence
// number, the kind and the payload, under the link's session key.
package agentwire

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// Frame kinds.
const (
	KindOpen     byte = 'O' // agent -> node: the request (Open, JSON)
	KindStdin    byte = 'I' // towards the command: bytes of its stdin
	KindStdinEOF byte = 'i' // towards the command: its stdin ends
	KindSignal   byte = 'S' // towards the command: a signal (one byte: its number)
	KindStdout   byte = 'o' // from the command: bytes of its stdout
	KindStderr   byte = 'e' // from the command: bytes of its stderr
	KindExit     byte = 'x' // from the command: its exit status (4 bytes, big-endian)
	KindRefuse   byte = 'r' // from a node: the request is refused (the reason, text)
	KindEnd      byte = 'E' // rank 0 -> a node: a run ended (its name): stop waiting for commands
	KindOK       byte = 'k' // a node's answer to KindEnd
)

// MaxPayload bounds one frame's payload; a stream's bytes go in frames of at most this.
const MaxPayload = 64 << 10

// MaxOpen bounds an Open request: the words of an MPI daemon's command line are a few
// hundred bytes; 256 KiB leaves room for a launcher's environment forwarding.
const MaxOpen = 256 << 10

// MaxWords bounds the words of a remote command.
const MaxWords = 4096

// macSize is HMAC-SHA256's size.
const macSize = sha256.Size

// ErrTooLarge is a frame longer than the bound.
var ErrTooLarge = errors.New("agentwire: a frame longer than its bound")

// Conn carries frames over a stream (a Unix socket, a TCP connection, a pipe pair). One
// reader and any number of writers may use it at once.
type Conn struct {
	r  *bufio.Reader
	w  io.Writer
	mu sync.Mutex // one frame at a time on w

	sendMAC, recvMAC hash.Hash
	sendSeq, recvSeq uint64
	hdr              [5]byte
}

// NewConn frames over r and w (unsigned until Sign).
func NewConn(r io.Reader, w io.Writer) *Conn {
	return &Conn{r: bufio.NewReaderSize(r, 32<<10), w: w}
}

// Sign makes every later frame carry an HMAC under sendKey, and requires one under recvKey
// on every frame read: the two sides of a link hold the keys crosswise.
func (c *Conn) Sign(sendKey, recvKey []byte) {
	c.sendMAC, c.recvMAC = hmac.New(sha256.New, sendKey), hmac.New(sha256.New, recvKey)
}

// Send writes one frame. A payload over MaxPayload is an error (split it: SendStream).
func (c *Conn) Send(kind byte, payload []byte) error {
	if len(payload) > MaxPayload && kind != KindOpen || len(payload) > MaxOpen {
		return ErrTooLarge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	buf := make([]byte, 0, 5+len(payload)+macSize)
	buf = append(buf, kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	buf = append(buf, payload...)
	if c.sendMAC != nil {
		c.sendSeq++
		buf = append(buf, mac(c.sendMAC, c.sendSeq, kind, payload)...)
	}
	_, err := c.w.Write(buf)
	return err
}

// Recv reads one frame. The payload is the caller's until the next Recv.
func (c *Conn) Recv() (byte, []byte, error) {
	if _, err := io.ReadFull(c.r, c.hdr[:]); err != nil {
		return 0, nil, err
	}
	kind, n := c.hdr[0], binary.BigEndian.Uint32(c.hdr[1:5])
	if n > MaxPayload && kind != KindOpen || n > MaxOpen {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	extra := 0
	if c.recvMAC != nil {
		extra = macSize
	}
	buf := make([]byte, int(n)+extra)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, nil, unexpected(err)
	}
	payload := buf[:n]
	if c.recvMAC != nil {
		c.recvSeq++
		if !hmac.Equal(buf[n:], mac(c.recvMAC, c.recvSeq, kind, payload)) {
			return 0, nil, errors.New("agentwire: a frame whose signature does not match (not the job's, or altered)")
		}
	}
	return kind, payload, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func mac(h hash.Hash, seq uint64, kind byte, payload []byte) []byte {
	h.Reset()
	var b [9]byte
	binary.BigEndian.PutUint64(b[:8], seq)
	b[8] = kind
	h.Write(b[:])
	h.Write(payload)
	return h.Sum(nil)
}

// Exit is an exit frame's payload for code.
func Exit(code int) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(int32(code)))
	return b[:]
}

// ExitCode reads an exit frame's payload.
func ExitCode(p []byte) (int, error) {
	if len(p) != 4 {
		return 0, fmt.Errorf("agentwire: an exit frame of %d bytes, not 4", len(p))
	}
	return int(int32(binary.BigEndian.Uint32(p))), nil
}

// Writer is an io.Writer that sends what is written as frames of kind, each at most
// MaxPayload.
type Writer struct {
	C    *Conn
	Kind byte
}

func (w Writer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), MaxPayload)
		if err := w.C.Send(w.Kind, p[:k]); err != nil {
			return n, err
		}
		n, p = n+k, p[k:]
	}
	return n, nil
}
