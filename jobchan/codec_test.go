package jobchan

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// signed is m's frame under secret.
func signed(secret string, m message) []byte {
	return m.appendFrame(nil, hmac.New(sha256.New, []byte(secret)))
}

// recvFrom feeds raw bytes to a fresh connection of job "1.0" under secret "k" and
// returns what recv makes of them.
func recvFrom(t *testing.T, raw []byte) (message, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = a.Write(raw); a.Close() }()
	return newConn(b, []byte("k"), "1.0").recv(time.Now().Add(2 * time.Second))
}

// Every field, the data and the odd values (negative, empty, a newline, a long reason)
// come back as they were sent.
func TestFrameRoundTrip(t *testing.T) {
	for _, m := range []message{
		{V: protocolVersion, Job: "1.0", Type: msgJoin, Rank: 7, Host: "n8", PID: 1234, Instance: "i", Nonce: strings.Repeat("a", 32), Session: "s", Seq: 1},
		{V: protocolVersion, Job: "1.0", Type: msgRelease, Rank: -3, PID: -1, Phase: "p\n{", Session: "s.t", Seq: 1 << 63,
			Data: map[string]string{"imageId": "sha256:00", "": "", "k\n": strings.Repeat("v", maxValue)}},
		{V: protocolVersion, Job: "1.0", Type: "unknown-type", Reason: strings.Repeat("é\n", 1000), Seq: 2},
	} {
		got, err := recvFrom(t, signed("k", m))
		if err != nil {
			t.Fatalf("%s: %v", m.Type, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("sent %+v\ngot  %+v", m, got)
		}
	}
}

// A benchctl of another protocol is refused with the version message, both ways: an
// earlier one's JSON line here, and this one's header read by an earlier one's JSON decoder.
func TestOtherProtocolVersionIsNamed(t *testing.T) {
	old := `{"v":3,"job":"1.0","type":"hello","rank":0,"session":"s","seq":1,"mac":"00"}` + "\n"
	_, err := recvFrom(t, []byte(old))
	var ae *authError
	if !errors.As(err, &ae) || ae.why != "protocol version 3 (this benchctl speaks 4; use the same benchctl on every node)" {
		t.Errorf("an earlier protocol's message: %v", err)
	}
	frame := signed("k", message{V: protocolVersion, Job: "1.0", Type: msgHello, Session: "s", Seq: 1})
	header := frame[:bytes.IndexByte(frame, '\n')+1]
	var earlier struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(header, &earlier); err != nil || earlier.V != protocolVersion {
		t.Errorf("an earlier benchctl reads the header %q as version %d: %v", header, earlier.V, err)
	}
}

// A frame altered anywhere, cut short, or with a header that lies is refused, never
// decoded: the MAC is checked before any field is read.
func TestTamperedOrMalformedFramesAreRefused(t *testing.T) {
	m := message{V: protocolVersion, Job: "1.0", Type: msgArrive, Rank: 1, Phase: "meet", Session: "s", Seq: 1, Data: map[string]string{"a.1": "b"}}
	frame := signed("k", m)
	body := bytes.IndexByte(frame, '\n') + 1
	for i := body; i < len(frame); i++ {
		bad := bytes.Clone(frame)
		bad[i] ^= 0x01
		if _, err := recvFrom(t, bad); err == nil || !strings.Contains(err.Error(), "bad MAC") {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	other := signed("other", m)
	if _, err := recvFrom(t, other); err == nil || !strings.Contains(err.Error(), "bad MAC") {
		t.Errorf("another secret: %v", err)
	}
	if _, err := recvFrom(t, frame[:len(frame)-1]); err == nil {
		t.Error("a frame cut short was read")
	}
	// A body that verifies and does not decode (a sender with a bug): refused as malformed.
	h := hmac.New(sha256.New, []byte("k"))
	h.Write([]byte{4, 200})
	junk := append([]byte{4, 200}, h.Sum(nil)...)
	hdr := []byte(`{"v":4,"n":` + strconv.Itoa(len(junk)) + "}\n")
	if _, err := recvFrom(t, append(hdr, junk...)); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("a verified body that does not decode: %v", err)
	}
	for _, header := range []string{`{"v":4,"n":0}`, `{"v":4,"n":-5}`, `{"v":4,"n":+50}`, `{"v":4,"n":050}`, `{"v":4,"n":65537}`,
		`{"v":4,"n":99999999999}`, `{"v":4,"n":}`, `{"v":4}`, `{"n":50,"v":4}`, `not json`, `{}`} {
		_, err := recvFrom(t, []byte(header+"\n"+strings.Repeat("x", 100)))
		var ae *authError
		if !errors.As(err, &ae) || strings.Contains(ae.why, "protocol version") {
			t.Errorf("header %s: %v", header, err)
		}
	}
}

// A stranger who announces the longest body and sends a little of it is read no further
// than it sent (the read ends with the connection), and the memory taken follows what
// arrived, not what was announced.
func TestAnnouncedLongBodyIsReadAsItArrives(t *testing.T) {
	raw := []byte(`{"v":4,"n":65536}` + "\n" + strings.Repeat("x", 5000))
	if _, err := recvFrom(t, raw); err == nil {
		t.Fatal("a body cut short was read")
	}
	a, b := net.Pipe()
	defer a.Close()
	c := newConn(b, []byte("k"), "1.0")
	go func() { _, _ = a.Write([]byte(`{"v":4,"n":65536}` + "\n" + strings.Repeat("x", 5000))) }()
	_ = c.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c.r.ReadSlice('\n'); err != nil {
		t.Fatal(err)
	}
	body, err := c.readBody(65536)
	if err == nil || cap(body) > 16<<10 {
		t.Errorf("read %d bytes of capacity %d: %v", len(body), cap(body), err)
	}
}

// FuzzRecv: whatever arrives, recv returns a message or an error, never panics, and
// anything it accepts was signed under the secret.
func FuzzRecv(f *testing.F) {
	f.Add(signed("k", message{V: protocolVersion, Job: "1.0", Type: msgArrive, Session: "s", Seq: 1, Data: map[string]string{"a": "b"}}))
	f.Add([]byte(`{"v":3,"job":"1.0"}` + "\n"))
	f.Add([]byte(`{"v":4,"n":40}` + "\n" + strings.Repeat("\x00", 40)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := recvFrom(t, raw)
		if err == nil && len(m.Data) < 2 && !bytes.HasPrefix(raw, signed("k", m)) {
			t.Errorf("accepted %q as %+v", raw, m)
		}
	})
}
