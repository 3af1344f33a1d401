package image

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// pingServer is an engine whose ping answers with headers, /version with version, /info with
// no security options and /libpod/info with rootless (404: nil); it counts the calls by path.
func pingServer(t *testing.T, headers map[string]string, version string, rootless *bool) (*client.Client, func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if i := strings.LastIndex(p, "/libpod/"); i >= 0 {
			p = p[i:]
		} else if i := strings.LastIndex(p, "/"); i >= 0 {
			p = p[i:]
		}
		mu.Lock()
		calls[r.Method+" "+p]++
		mu.Unlock()
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		switch p {
		case "/_ping":
			_, _ = w.Write([]byte("OK"))
		case "/libpod/info":
			if rootless == nil {
				http.NotFound(w, r)
				return
			}
			if *rootless {
				_, _ = w.Write([]byte(`{"host":{"security":{"rootless":true}}}`))
				return
			}
			_, _ = w.Write([]byte(`{"host":{"security":{"rootless":false}}}`))
		case "/version":
			_, _ = w.Write([]byte(version))
		case "/info":
			_, _ = w.Write([]byte(`{"ID":"x","SecurityOptions":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(client.WithHost("tcp://" + strings.TrimPrefix(srv.URL, "http://")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range calls {
			out[k] = v
		}
		return out
	}
}

// Docker is told by its ping alone (no /version, no /info: each costs the engine 10-25 ms),
// incomplete; Podman by its ping and its own /libpod/info (never /version: 0.7 s), complete;
// an engine whose ping names neither is asked the slow way.
func TestIdentifyQuick(t *testing.T) {
	yes := true
	docker := map[string]string{"Api-Version": "1.41", "Server": "Docker/20.10.24+dfsg1 (linux)"}
	podman := map[string]string{"Api-Version": "1.41", "Server": "Libpod/4.3.1 (linux)", "Libpod-Api-Version": "4.3.1"}
	for _, tt := range []struct {
		name      string
		headers   map[string]string
		rootless  *bool
		want      Identity
		complete  bool
		wantCalls map[string]int
	}{
		{"docker", docker, nil, Identity{Kind: KindDocker, Name: "Docker Engine", Version: "20.10.24+dfsg1", APIVersion: "1.41"}, false,
			map[string]int{"HEAD /_ping": 1}},
		{"podman rootless", podman, &yes, Identity{Kind: KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41", Rootless: true}, true,
			map[string]int{"HEAD /_ping": 1, "GET /libpod/info": 1}},
		{"podman without its own API", podman, nil, Identity{Kind: KindPodman, Name: "Podman Engine", Version: "4.3.1", APIVersion: "1.41",
			RootlessUnknown: "GET /libpod/info: 404 Not Found"}, true, map[string]int{"HEAD /_ping": 1, "GET /libpod/info": 1}},
		{"podman by its Server header alone", map[string]string{"Server": "Libpod/5.2.3 (linux)"}, &yes,
			Identity{Kind: KindPodman, Name: "Podman Engine", Version: "5.2.3", Rootless: true}, true, map[string]int{"HEAD /_ping": 1, "GET /libpod/info": 1}},
		{"unknown: the slow way", map[string]string{"Api-Version": "1.41", "Server": "nginx"}, nil,
			Identity{Kind: KindDocker, Name: "Docker Engine", Version: "20.10.24+dfsg1", APIVersion: "1.41"}, true,
			map[string]int{"HEAD /_ping": 2, "GET /version": 1, "GET /info": 1}},
		{"a 6,000-character version: the slow way", map[string]string{"Server": "Docker/" + strings.Repeat("9", 6000) + " (linux)"}, nil,
			Identity{Kind: KindDocker, Name: "Docker Engine", Version: "20.10.24+dfsg1", APIVersion: "1.41"}, true,
			map[string]int{"HEAD /_ping": 2, "GET /version": 1, "GET /info": 1}},
		{"a version with a character no version has: the slow way", map[string]string{"Server": "Docker/20.10;'rm' (linux)"}, nil,
			Identity{Kind: KindDocker, Name: "Docker Engine", Version: "20.10.24+dfsg1", APIVersion: "1.41"}, true,
			map[string]int{"HEAD /_ping": 2, "GET /version": 1, "GET /info": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, calls := pingServer(t, tt.headers, dockerVersion, tt.rootless)
			got, complete, err := IdentifyQuick(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Host = c.DaemonHost()
			if got != tt.want || complete != tt.complete {
				t.Errorf("IdentifyQuick = %+v, %v; want %+v, %v", got, complete, tt.want, tt.complete)
			}
			if c := calls(); len(c) != len(tt.wantCalls) || func() bool {
				for k, v := range tt.wantCalls {
					if c[k] != v {
						return true
					}
				}
				return false
			}() {
				t.Errorf("calls %v, want %v", c, tt.wantCalls)
			}
		})
	}
}

// An engine that accepts and never answers, or answers with endless headers, is an error
// within the caller's bound (the slow way is tried, in what is left of it); one that
// cannot be reached names its address.
func TestIdentifyQuickHostileEngines(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	flood, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	go func() {
		for {
			c, err := flood.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\n"))
				line := []byte("X-Pad: " + strings.Repeat("a", 1000) + "\r\n")
				for range 200 { // 200 KB of headers, past pingLimit
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			}()
		}
	}()
	for _, tt := range []struct{ name, host, want string }{
		{"silent", "tcp://" + silent.Addr().String(), silent.Addr().String()},
		{"endless headers", "tcp://" + flood.Addr().String(), flood.Addr().String()},
		{"unreachable", "unix:///nonexistent/benchctl-test.sock", "/nonexistent/benchctl-test.sock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(client.WithHost(tt.host))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, _, err := IdentifyQuick(ctx, c)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want one with %q", err, tt.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("IdentifyQuick did not end with its context")
			}
		})
	}
}

// A Docker identity is completed by its /version and /info answers; Podman's, which the
// ping made complete, is left as it is.
func TestCompleteIdentity(t *testing.T) {
	quick := Identity{Kind: KindDocker, Name: "Docker Engine", Version: "28.3.0", APIVersion: "1.51", Host: "unix:///d.sock", PID: 7}
	got := CompleteIdentity(quick, KindDocker, "Docker Engine - Community", "28.3.0", "1.51", true, "")
	want := quick
	want.Name, want.Rootless = "Docker Engine - Community", true
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	got = CompleteIdentity(quick, KindDocker, "Docker Engine", "28.3.0", "1.51", false, "EOF")
	if got.RootlessUnknown != "/info: EOF" || got.Rootless {
		t.Errorf("an /info that failed: %+v", got)
	}
	pod := Identity{Kind: KindPodman, Name: "Podman Engine", Version: "4.3.1", Rootless: true}
	if got := CompleteIdentity(pod, KindPodman, "Podman Engine", "4.3.1", "1.41", false, ""); got != pod {
		t.Errorf("podman changed: %+v", got)
	}
	if got := CompleteIdentity(quick, KindPodman, "Podman Engine", "4.3.1", "1.41", true, ""); got != quick {
		t.Errorf("answers of another kind changed it: %+v", got)
	}
}
