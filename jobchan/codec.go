package jobchan

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"
)

// A message on the wire (protocol 4) is a frame: a header line, then a binary body.
//
//	{"v":4,"n":N}\n   the header: JSON, so that a benchctl of an earlier protocol reads the
//	                  version in it and refuses the job with its version message
//	body (N bytes)    the fields, then the HMAC-SHA256 (32 bytes) of all of them
//
// The body's fields, in this order: V (uvarint); Job, Type, Host, Instance, Nonce, Phase,
// Session, Reason (each a uvarint length and the bytes); Rank, PID (varints); Seq (uvarint);
// the number of data entries (uvarint), then each key and value (strings as above).
//
// The MAC covers the body as sent, so a message is encoded once, and the receiver checks
// the MAC before it reads any field: nothing a stranger sends is parsed beyond the header.
// Encoding and decoding by hand (no reflection, the buffers reused) is what made protocol 4:
// encoding/json was an eighth of a 16,384-rank job's CPU (docs/PERFORMANCE.md).

// macSize is the length of the MAC at the end of a body.
const macSize = 32

// headerRoom is the space kept before a body for its header: `{"v":4,"n":` with a version
// of up to 4 digits, a length of up to 20 (any int), `}\n`.
const headerRoom = 40

// headerPrefix starts every header of this protocol.
var headerPrefix = []byte(`{"v":` + strconv.Itoa(protocolVersion) + `,"n":`)

// frameBufs are the buffers frames are encoded into.
var frameBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// appendFrame appends m's frame to b, its MAC made with h (an HMAC-SHA256 under the job
// secret, reset here).
func (m *message) appendFrame(b []byte, h hash.Hash) []byte {
	start := len(b)
	b = append(b, make([]byte, headerRoom)...)
	body := len(b)
	b = binary.AppendUvarint(b, uint64(m.V))
	for _, f := range [...]string{m.Job, m.Type, m.Host, m.Instance, m.Nonce, m.Phase, m.Session, m.Reason} {
		b = appendString(b, f)
	}
	b = binary.AppendVarint(b, int64(m.Rank))
	b = binary.AppendVarint(b, int64(m.PID))
	b = binary.AppendUvarint(b, m.Seq)
	b = binary.AppendUvarint(b, uint64(len(m.Data)))
	for k, v := range m.Data { // the MAC is of the bytes as sent: any order will do
		b = appendString(appendString(b, k), v)
	}
	h.Reset()
	h.Write(b[body:])
	b = h.Sum(b)
	var hdr [headerRoom]byte
	head := append(append(hdr[:0], headerPrefix...), strconv.Itoa(len(b)-body)...)
	head = append(head, '}', '\n')
	off := body - len(head)
	copy(b[off:], head)
	return append(b[:start], b[off:]...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// bodyLen reads a frame's header line: the body's length, or why the line is not a header
// of this protocol (an earlier benchctl's JSON message says its version).
func bodyLen(line []byte) (int, error) {
	if rest, ok := bytes.CutPrefix(line, headerPrefix); ok {
		if digits, ok := bytes.CutSuffix(rest, []byte("}\n")); ok && len(digits) > 0 && len(digits) <= 6 {
			n, err := strconv.Atoi(string(digits))
			switch {
			case err != nil || digits[0] == '0' || digits[0] == '+' || digits[0] == '-':
			case n <= macSize || n > maxMessage:
				return 0, &authError{fmt.Sprintf("message of %d bytes (at most %d)", n, maxMessage)}
			default:
				return n, nil
			}
		}
		return 0, &authError{"not a job channel message"}
	}
	var v struct {
		V *int `json:"v"`
	}
	if json.Unmarshal(line, &v) != nil || v.V == nil || *v.V == protocolVersion {
		return 0, &authError{"not a job channel message"}
	}
	return 0, &authError{fmt.Sprintf("protocol version %d (this benchctl speaks %d; use the same benchctl on every node)", *v.V, protocolVersion)}
}

// errBadMAC is a body whose MAC does not verify.
var errBadMAC = &authError{"bad MAC (a different job secret, or a forged message)"}

// errMalformed is a body that verified and still does not decode: a sender of this job
// with a bug, never a stranger.
var errMalformed = &authError{"malformed message (is every node running the same benchctl?)"}

// decodeBody checks body's MAC with h and decodes it into m. Strings equal to job or
// session are those (no copy).
func decodeBody(body []byte, h hash.Hash, job, session string, m *message) error {
	if len(body) <= macSize {
		return errMalformed
	}
	fields, sum := body[:len(body)-macSize], body[len(body)-macSize:]
	h.Reset()
	h.Write(fields)
	var want [macSize]byte
	if !hmac.Equal(sum, h.Sum(want[:0])) {
		return errBadMAC
	}
	d := decoder{b: fields}
	m.V = int(d.uvarint())
	m.Job = d.str(job)
	m.Type = d.msgType()
	m.Host = d.str("")
	m.Instance = d.str("")
	m.Nonce = d.str("")
	m.Phase = d.str("")
	m.Session = d.str(session)
	m.Reason = d.str("")
	m.Rank = int(d.varint())
	m.PID = int(d.varint())
	m.Seq = d.uvarint()
	n := d.uvarint()
	if d.err == nil && n > 0 {
		if n > uint64(len(d.b)/2) { // each entry takes two bytes at least
			return errMalformed
		}
		m.Data = make(map[string]string, n)
		for range n {
			k := d.str("")
			m.Data[k] = d.str("")
		}
	}
	if d.err != nil || len(d.b) != 0 || m.V != protocolVersion {
		return errMalformed
	}
	return nil
}

// decoder reads a body's fields; the first error sticks, and every later read is zero.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("short body")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint() // zig-zag, as binary.AppendVarint wrote it
	return int64(u>>1) ^ -int64(u&1)
}

// bytes is the next string's bytes, valid until the body is reused.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

// str is the next string; known, when it is equal, with no copy.
func (d *decoder) str(known string) string {
	b := d.bytes()
	if len(b) == 0 {
		return ""
	}
	if string(b) == known {
		return known
	}
	return string(b)
}

// msgType is the next string, one of the message types with no copy.
func (d *decoder) msgType() string {
	b := d.bytes()
	for _, t := range [...]string{msgArrive, msgRelease, msgBeat, msgHello, msgJoin, msgWelcome, msgAbort, msgFail, msgEnd, msgBye, msgRefuse} {
		if string(b) == t {
			return t
		}
	}
	return string(b)
}
