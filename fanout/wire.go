package fanout

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net"
	"strings"
	"unicode/utf8"
)

// The fan-out's wire format (see fanout.go for why). Integers are big-endian.
//
// Handshake, on a connection from rank r-1 (the dialer) to rank r's listener:
//
//	listener: "benchctl-fanout/1 " hex(nonceL, 16 bytes) "\n"
//	dialer:   "BCFO" | version u8 | len(job) u8 | job | from u32 | to u32 | frameSize u32 |
//	          nonceD [16] | HMAC(secret, "benchctl fanout dial" | the fields | nonceL)
//	listener: 'A' | HMAC(secret, "benchctl fanout accept" | the same)    accepted, or
//	          'R' | len u8 | reason                                        refused (not this rank,
//	                                                                       not this secret, busy)
//
// The hello is a text line so that a job channel worker probing the same port range fails at
// once on it (and the dialer fails at once on a job channel leader's JSON hello). Then the
// dialer sends frames, type u8 | len u32 | payload | tag, and the listener answers with at
// most one status frame, the same way. A frame's tag is
//
//	HMAC-SHA256(key, seq u64 | type u8 | len u32 | SHA-256(payload))
//
// with seq counting the frames of that direction from 0 and key derived from the secret and
// the handshake (both nonces, the job and both ranks), one per direction: a frame of another
// connection, another position or another direction does not verify. Hashing the payload
// once and MACing its digest lets a relay verify a frame and sign it for its successor with
// one pass of SHA-256 over the data instead of two.
const (
	helloPrefix = "benchctl-fanout/1 "
	helloLen    = len(helloPrefix) + 32 + 1
	magic       = "BCFO"
	version     = 1
	tagSize     = sha256.Size
	maxFrame    = 16 << 20 // the largest FrameSize
	maxReason   = 1024     // bytes of a reason in an abort or fail frame
)

// Frame types. Data flows down (dialer to listener), status up.
const (
	frameStart   = 'S' // size i64, -1 when unknown; the first frame
	frameData    = 'D' // 1..frameSize bytes of the image
	frameTrailer = 'T' // size u64 | xxh64 u64: the end
	frameAbort   = 'A' // origin rank u32 | reason: the stream ends in failure
	statusOK     = 'K' // bytes u64: received whole, checksum matched
	statusFail   = 'F' // origin rank u32 | reason: the receiver (or one after it) failed
)

// dialMessage is the dialer's handshake message; with nonceL, what both MACs and keys bind.
type dialMessage struct {
	job             string
	from, to, frame int
	nonceL, nonceD  [16]byte
}

func (d *dialMessage) mac(secret []byte, label string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	var b [14]byte
	b[0] = 0
	binary.BigEndian.PutUint32(b[1:], uint32(d.from))
	binary.BigEndian.PutUint32(b[5:], uint32(d.to))
	binary.BigEndian.PutUint32(b[9:], uint32(d.frame))
	b[13] = byte(len(d.job))
	h.Write(b[:])
	h.Write([]byte(d.job))
	h.Write(d.nonceL[:])
	h.Write(d.nonceD[:])
	return h.Sum(nil)
}

func (d *dialMessage) marshal(secret []byte) []byte {
	b := append([]byte(magic), version, byte(len(d.job)))
	b = append(b, d.job...)
	b = binary.BigEndian.AppendUint32(b, uint32(d.from))
	b = binary.BigEndian.AppendUint32(b, uint32(d.to))
	b = binary.BigEndian.AppendUint32(b, uint32(d.frame))
	b = append(b, d.nonceD[:]...)
	return append(b, d.mac(secret, "benchctl fanout dial")...)
}

// readDialMessage reads a dial message (at most 6+255+60 bytes) and checks its MAC; a wrong
// magic ends it at the first 6 bytes.
func readDialMessage(r io.Reader, secret []byte, nonceL [16]byte) (*dialMessage, error) {
	var head [6]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	if string(head[:4]) != magic {
		return nil, fmt.Errorf("not a fan-out handshake")
	}
	if head[4] != version {
		return nil, fmt.Errorf("fan-out protocol version %d, this benchctl speaks %d", head[4], version)
	}
	rest := make([]byte, int(head[5])+12+16+tagSize)
	if _, err := io.ReadFull(r, rest); err != nil {
		return nil, err
	}
	d := &dialMessage{job: string(rest[:head[5]]), nonceL: nonceL}
	rest = rest[head[5]:]
	d.from, d.to = int(binary.BigEndian.Uint32(rest)), int(binary.BigEndian.Uint32(rest[4:]))
	d.frame = int(binary.BigEndian.Uint32(rest[8:]))
	copy(d.nonceD[:], rest[12:28])
	if !hmac.Equal(rest[28:], d.mac(secret, "benchctl fanout dial")) {
		return nil, fmt.Errorf("authentication failed (another job's secret?)")
	}
	return d, nil
}

func newNonce() (n [16]byte) {
	_, _ = rand.Read(n[:])
	return n
}

// macSeq signs or checks the frames of one direction of a link.
type macSeq struct {
	h   hash.Hash
	seq uint64
	buf []byte
}

func newMacSeq(key []byte) *macSeq { return &macSeq{h: hmac.New(sha256.New, key)} }

// next is the tag of the next frame of this direction (and counts it).
func (m *macSeq) next(typ byte, n int, digest *[32]byte) []byte {
	var b [13]byte
	binary.BigEndian.PutUint64(b[:], m.seq)
	b[8] = typ
	binary.BigEndian.PutUint32(b[9:], uint32(n))
	m.seq++
	m.h.Reset()
	m.h.Write(b[:])
	m.h.Write(digest[:])
	m.buf = m.h.Sum(m.buf[:0])
	return m.buf
}

// link is one authenticated connection between neighbours of the chain. The dialer
// (upstream) writes frames under out and reads the status under in; the listener the other
// way round.
type link struct {
	nc   net.Conn
	br   *bufio.Reader
	peer int // the other end's rank
	out  *macSeq
	in   *macSeq
	hdr  [5]byte
}

func newLink(nc net.Conn, d *dialMessage, secret []byte, dialer bool) *link {
	data, status := d.mac(secret, "benchctl fanout data"), d.mac(secret, "benchctl fanout status")
	l := &link{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	if dialer {
		l.peer, l.out, l.in = d.to, newMacSeq(data), newMacSeq(status)
	} else {
		l.peer, l.out, l.in = d.from, newMacSeq(status), newMacSeq(data)
	}
	return l
}

// write sends one frame (one writev); digest is SHA-256 of payload.
func (l *link) write(typ byte, payload []byte, digest *[32]byte) error {
	l.hdr[0] = typ
	binary.BigEndian.PutUint32(l.hdr[1:], uint32(len(payload)))
	bufs := net.Buffers{l.hdr[:], payload, l.out.next(typ, len(payload), digest)}
	_, err := bufs.WriteTo(l.nc)
	return err
}

// writeControl sends a small frame, hashing it here.
func (l *link) writeControl(typ byte, payload []byte) error {
	d := sha256.Sum256(payload)
	return l.write(typ, payload, &d)
}

// readHeader reads a frame's type and length, refusing a type not in allowed and a length
// over what the type allows before anything is allocated for it.
func (l *link) readHeader(frameSize int, allowed string) (byte, int, error) {
	var h [5]byte
	if _, err := io.ReadFull(l.br, h[:]); err != nil {
		return 0, 0, err
	}
	typ, n := h[0], int64(binary.BigEndian.Uint32(h[1:]))
	if strings.IndexByte(allowed, typ) < 0 {
		return 0, 0, &frameError{fmt.Sprintf("unexpected frame type %q", typ)}
	}
	lo, hi := int64(8), int64(8) // start, ok
	switch typ {
	case frameData:
		lo, hi = 1, int64(frameSize)
	case frameTrailer:
		lo, hi = 16, 16
	case frameAbort, statusFail:
		lo, hi = 4, 4+maxReason
	}
	if n < lo || n > hi {
		return 0, 0, &frameError{fmt.Sprintf("%c frame of %d bytes (allowed: %d to %d)", typ, n, lo, hi)}
	}
	return typ, int(n), nil
}

// readBody reads a frame's payload into p (its length) and its tag into tag.
func (l *link) readBody(p []byte, tag *[tagSize]byte) error {
	if _, err := io.ReadFull(l.br, p); err != nil {
		return err
	}
	_, err := io.ReadFull(l.br, tag[:])
	return err
}

// readControl reads one small frame whole and checks it.
func (l *link) readControl(allowed string) (byte, []byte, error) {
	typ, n, err := l.readHeader(0, allowed)
	if err != nil {
		return 0, nil, err
	}
	p, tag := make([]byte, n), new([tagSize]byte)
	if err := l.readBody(p, tag); err != nil {
		return 0, nil, err
	}
	d := sha256.Sum256(p)
	if !hmac.Equal(tag[:], l.in.next(typ, n, &d)) {
		return 0, nil, &frameError{fmt.Sprintf("%c frame failed authentication", typ)}
	}
	return typ, p, nil
}

// frameError is a frame that is malformed or does not authenticate.
type frameError struct{ why string }

func (e *frameError) Error() string { return e.why }

// failPayload is an abort or fail frame's payload: the origin rank and the reason (cut to
// maxReason bytes on a character boundary).
func failPayload(origin int, reason string) []byte {
	for len(reason) > maxReason {
		_, size := utf8.DecodeLastRuneInString(reason)
		reason = reason[:len(reason)-size]
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(origin)), reason...)
}

func parseFail(p []byte) (origin int, reason string) {
	return int(binary.BigEndian.Uint32(p)), string(p[4:])
}

func hexNonce(n [16]byte) string { return hex.EncodeToString(n[:]) }
