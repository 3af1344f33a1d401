package agentwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// An ssh command line as the launchers write it: hydra's -x, ssh's options with values,
// user@host, "--"; what is not a command is refused, with the usage.
func TestParseSSH(t *testing.T) {
	for _, c := range []struct {
		args  []string
		host  string
		words string
	}{
		{[]string{"n2", " orted", "-mca", "ess", `"env"`}, "n2", ` orted -mca ess "env"`},
		{[]string{"-x", "n2", "/usr/bin/hydra_pmi_proxy", "--control-port", "n1:39891"}, "n2", "/usr/bin/hydra_pmi_proxy --control-port n1:39891"},
		{[]string{"-o", "StrictHostKeyChecking=no", "-p", "22", "-l", "root", "-T", "user@n3.cluster", "hostname"}, "n3.cluster", "hostname"},
		{[]string{"--", "n1", "-x"}, "n1", "-x"},
	} {
		h, w, err := ParseSSH(c.args)
		if err != nil || h != c.host || strings.Join(w, " ") != c.words {
			t.Errorf("%q: %q %q %v", c.args, h, w, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no host"},
		{[]string{"-x", "-o", "A=b"}, "no host"},
		{[]string{"n2"}, "no command for n2"},
		{[]string{"@"}, "an empty host name"},
		{append([]string{"n2"}, make([]string, MaxWords+1)...), "more than 4096"},
	} {
		if _, _, err := ParseSSH(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

// Frames go through whole; a signed link refuses a frame altered, replayed or signed
// under another key; a length over the bound is refused before anything is read.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	a := NewConn(nil, &buf)
	a.Sign([]byte("k1"), []byte("k2"))
	big := bytes.Repeat([]byte("x"), MaxPayload)
	for _, p := range [][]byte{[]byte("hello"), nil, big} {
		if err := a.Send(KindStdout, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Send(KindStdout, append(big, 'y')); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a payload over the bound: %v", err)
	}
	wire := buf.Bytes()
	b := NewConn(bytes.NewReader(wire), io.Discard)
	b.Sign([]byte("k2"), []byte("k1"))
	for _, want := range []int{5, 0, MaxPayload} {
		k, p, err := b.Recv()
		if err != nil || k != KindStdout || len(p) != want {
			t.Fatalf("frame: %c %d %v", k, len(p), err)
		}
	}
	// Altered: one byte of the first payload.
	bad := bytes.Clone(wire)
	bad[6] ^= 1
	c := NewConn(bytes.NewReader(bad), io.Discard)
	c.Sign(nil, []byte("k1"))
	if _, _, err := c.Recv(); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("altered: %v", err)
	}
	// Replayed: the first frame twice (its sequence number is the first).
	first := wire[:5+5+macSize]
	c = NewConn(bytes.NewReader(append(bytes.Clone(first), first...)), io.Discard)
	c.Sign(nil, []byte("k1"))
	if _, _, err := c.Recv(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Recv(); err == nil {
		t.Error("a replayed frame was read")
	}
	// Another key.
	c = NewConn(bytes.NewReader(wire), io.Discard)
	c.Sign(nil, []byte("another"))
	if _, _, err := c.Recv(); err == nil {
		t.Error("a frame under another key was read")
	}
	// A 4 GiB length: refused at once, nothing allocated.
	var hdr [5]byte
	hdr[0] = KindStdin
	binary.BigEndian.PutUint32(hdr[1:], 0xFFFFFFFF)
	if _, _, err := NewConn(bytes.NewReader(hdr[:]), io.Discard).Recv(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("4 GiB frame: %v", err)
	}
	// An open request may be larger than a stream frame, to its own bound.
	hdr[0] = KindOpen
	binary.BigEndian.PutUint32(hdr[1:], MaxOpen+1)
	if _, _, err := NewConn(bytes.NewReader(hdr[:]), io.Discard).Recv(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("open over its bound: %v", err)
	}
	// Cut short.
	if _, _, err := NewConn(bytes.NewReader(wire[:8]), io.Discard).Recv(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut: %v", err)
	}
	if code, err := ExitCode(Exit(-3)); code != -3 || err != nil {
		t.Errorf("exit: %d %v", code, err)
	}
	if _, err := ExitCode([]byte{1}); err == nil {
		t.Error("a short exit frame was read")
	}
}

// Writer cuts what is written into frames of at most MaxPayload.
func TestWriterSplits(t *testing.T) {
	var buf bytes.Buffer
	w := Writer{NewConn(nil, &buf), KindStderr}
	if n, err := w.Write(make([]byte, 2*MaxPayload+1)); n != 2*MaxPayload+1 || err != nil {
		t.Fatal(n, err)
	}
	c := NewConn(&buf, io.Discard)
	for _, want := range []int{MaxPayload, MaxPayload, 1} {
		if _, p, err := c.Recv(); err != nil || len(p) != want {
			t.Fatalf("%d %v", len(p), err)
		}
	}
}

// The agent's usage errors exit 255 (ssh's: the launcher reads a failed launch), and a
// socket nobody listens on says where the agent works.
func TestMainUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent"}, "usage"},
		{[]string{"agent", "run"}, "usage"},
		{[]string{"agent", "launch", "mpirun"}, "usage"},
		{[]string{"agent", "-x"}, "no host"},
		{[]string{"agent", "n2"}, "no command for n2"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, nil, &out, &errb); code != ExitTransport || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: %d %q", c.args, code, errb.String())
		}
	}
	t.Setenv(EnvSocket, t.TempDir()+"/none.sock")
	var errb bytes.Buffer
	if code := Main([]string{"agent", "n2", "true"}, nil, io.Discard, &errb); code != ExitTransport || !strings.Contains(errb.String(), "cannot reach this node's benchctl") {
		t.Errorf("no socket: %d %q", code, errb.String())
	}
	errb.Reset()
	t.Setenv("PATH", t.TempDir()) // no MPI there (launch would replace this test with one)
	if code := Main([]string{"agent", "launch", "mpiexec", "--", "x"}, nil, io.Discard, &errb); code != 127 ||
		!strings.Contains(errb.String(), "none of mpiexec.hydra, mpiexec.mpich, mpiexec is on PATH") || !strings.Contains(errb.String(), "install MPICH or Intel MPI (hydra)") {
		t.Errorf("no launcher: %d %q", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"agent", "launch", "srun", "--", "x"}, nil, io.Discard, &errb); code != ExitTransport || !strings.Contains(errb.String(), "not an MPI launcher") {
		t.Errorf("srun: %d %q", code, errb.String())
	}
}
