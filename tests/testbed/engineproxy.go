//go:build linux

package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// EngineProxy is a Docker Engine API proxy on a unix socket of its own: it forwards every
// request to a real engine's socket, streaming bodies both ways as they come, and injects
// faults into `POST /images/load` (LoadFault). Point a node at it through DOCKER_HOST (Host).
type EngineProxy struct {
	// Host is the proxy's DOCKER_HOST value (unix://...).
	Host string
	// Loads counts the image loads the proxy has seen (refused ones included).
	Loads atomic.Int32
	// LoadBytes counts the load request bytes the proxy has read from its clients.
	LoadBytes atomic.Int64

	fault LoadFault
	srv   *http.Server
	rp    *httputil.ReverseProxy
	tr    *http.Transport
}

// LoadFault is what an EngineProxy does to image loads.
type LoadFault struct {
	// Refuse answers every load with HTTP 500 and {"message": RefuseMessage}, after reading
	// RefuseAfter bytes of the request body (0: none); the engine never sees the load.
	Refuse        bool
	RefuseAfter   int64
	RefuseMessage string
	// BytesPerSecond, when not 0, forwards loads to the engine but reads their request
	// bodies at about this rate.
	BytesPerSecond int64
	// OnBytes, when not nil, is called once per load when CallbackAfter body bytes have been
	// read, with the pid of the client process (SO_PEERCRED of its connection), or why it is
	// not known. The load goes on (or fails, if the callback ends the client) when it returns.
	CallbackAfter int64
	OnBytes       func(pid int32, err error)
}

var loadPath = regexp.MustCompile(`^(/v[0-9][0-9.]*)?/images/load$`)

type peerKey struct{}

// peer is the client process of one accepted connection.
type peer struct {
	pid int32
	err error
}

// StartEngineProxy starts a proxy in front of engine (a DOCKER_HOST value, unix://PATH),
// closed when the test ends.
func StartEngineProxy(t testing.TB, engine string, fault LoadFault) *EngineProxy {
	t.Helper()
	target, ok := strings.CutPrefix(engine, "unix://")
	if !ok {
		t.Fatalf("engine proxy: %q is not a unix:// socket", engine)
	}
	// A short folder of its own: unix socket paths are limited to 107 bytes.
	dir, err := os.MkdirTemp("/var/tmp", "bctb-proxy-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	p := &EngineProxy{Host: "unix://" + sock, fault: fault}
	p.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", target)
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.Host = "http", "docker", "docker"
		},
		Transport:     p.tr,
		FlushInterval: -1, // stream every response (loads, saves, logs) as it comes
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeEngineError(w, http.StatusBadGateway, "engine proxy: "+err.Error())
		},
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(p.serve),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerOf(c))
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		p.srv.Close() // the listener and every connection
		<-done
		p.tr.CloseIdleConnections()
		os.RemoveAll(dir)
	})
	return p
}

// peerOf is the process at the other end of a unix connection.
func peerOf(c net.Conn) peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer{err: fmt.Errorf("not a unix connection: %T", c)}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{err: err}
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{err: err}
	}
	if cerr != nil {
		return peer{err: cerr}
	}
	return peer{pid: cred.Pid}
}

func (p *EngineProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !loadPath.MatchString(r.URL.Path) {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.Loads.Add(1)
	f := p.fault
	pr, ok := r.Context().Value(peerKey{}).(peer)
	body := &faultBody{r: r.Body, p: p, rate: f.BytesPerSecond, after: f.CallbackAfter, start: time.Now()}
	if f.OnBytes != nil {
		body.cb = func() {
			switch {
			case !ok:
				f.OnBytes(0, errors.New("engine proxy: the load's connection has no peer"))
			case pr.err == nil && pr.pid <= 0:
				f.OnBytes(0, fmt.Errorf("engine proxy: SO_PEERCRED gave pid %d", pr.pid))
			default:
				f.OnBytes(pr.pid, pr.err)
			}
		}
	}
	if f.Refuse {
		if f.RefuseAfter > 0 {
			io.CopyN(io.Discard, body, f.RefuseAfter)
		}
		msg := f.RefuseMessage
		if msg == "" {
			msg = "engine proxy: this engine refuses image loads"
		}
		writeEngineError(w, http.StatusInternalServerError, msg)
		return
	}
	r.Body = body
	p.rp.ServeHTTP(w, r)
}

func writeEngineError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]string{"message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

// faultBody is a load's request body as the proxy reads it: counted, paced, and with the
// callback once enough has passed.
type faultBody struct {
	r     io.ReadCloser
	p     *EngineProxy
	rate  int64
	after int64
	cb    func()
	once  sync.Once
	start time.Time
	n     int64
}

func (b *faultBody) Read(buf []byte) (int, error) {
	if b.rate > 0 {
		// At most a tenth of a second's worth at a time, and never ahead of the rate.
		if max := int(b.rate / 10); max > 0 && len(buf) > max {
			buf = buf[:max]
		}
		if ahead := time.Duration(float64(b.n)/float64(b.rate)*float64(time.Second)) - time.Since(b.start); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	n, err := b.r.Read(buf)
	b.n += int64(n)
	b.p.LoadBytes.Add(int64(n))
	if b.cb != nil && b.n >= b.after {
		b.once.Do(b.cb)
	}
	return n, err
}

func (b *faultBody) Close() error { return b.r.Close() }
