package testbed_test

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/tests/testbed"
)

func TestCountBlobGets(t *testing.T) {
	const d = "sha256:f9663c9fdf5d2b7aacaea27ddedc4820ce21fa97e70c9462c86f3c8aef6abf83"
	const ua = `"docker/20.10.24+dfsg1 go/go1.19.8 os/linux arch/amd64 UpstreamClient(Docker-Client/28.2.2 \\(linux\\))"`
	log := strings.Join([]string{
		`time="2026-11-25T10:10:11.1Z" level=info msg="response completed" http.request.method=GET http.request.uri="/v2/a/blobs/` + d + `" http.response.status=200`,
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "GET /v2/a/blobs/` + d + ` HTTP/1.1" 200 2225818 "" ` + ua, // counts
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "HEAD /v2/a/blobs/` + d + ` HTTP/1.1" 200 0 "" ` + ua,
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "GET /v2/a/blobs/` + d + ` HTTP/1.1" 404 157 "" ` + ua,
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "GET /v2/a/blobs/` + d + ` HTTP/1.1" 401 87 "" ` + ua,
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "PUT /v2/a/blobs/uploads/x?_state=y&digest=` + strings.Replace(d, ":", "%3A", 1) + ` HTTP/1.1" 201 0 "" ` + ua,
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "GET /v2/a/manifests/` + d + ` HTTP/1.1" 200 527 "" ` + ua,
		`127.0.0.1 - - [25/Nov/2026:10:10:10 +0000] "GET /v2/a/blobs/sha256:0123 HTTP/1.1" 200 10 "" ` + ua,
		`127.0.0.1 - - [25/Nov/2026:10:10:12 +0000] "GET /v2/e2e/b/c/blobs/` + d + ` HTTP/1.1" 206 1000 "" ` + ua, // counts
	}, "\n") + "\n"
	n, err := testbed.CountBlobGets(strings.NewReader(log), d)
	if err != nil || n != 2 {
		t.Fatalf("CountBlobGets = %d, %v; want 2", n, err)
	}
}

// importUnique imports a one-file image with content of its own into node's engine, so that
// no engine has its layers, and returns its id.
func importUnique(t *testing.T, tb *testbed.Testbed, node, ref, content string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "regtest", Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)})
	tw.Write([]byte(content))
	tw.Close()
	eng := tb.Engine(t, node)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := eng.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, ref, client.ImageImportOptions{})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	out, _ := io.ReadAll(res)
	res.Close()
	if bytes.Contains(out, []byte(`"error"`)) {
		t.Fatalf("import %s: %s", ref, out)
	}
	inspect, err := eng.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatalf("inspect %s: %v", ref, err)
	}
	return inspect.ID
}

// TestRegistryRoundTrip pushes an image from n1 to each registry, pulls it on a cold n2 through
// the Engine API, and checks that the registry's log counts each blob fetched once. It uses an
// image of its own rather than the shell image: other tests, maybe running at the same time,
// need the shell image on every engine.
func TestRegistryRoundTrip(t *testing.T) {
	tb := testbed.Require(t)
	tb.RequireRegistry(t)
	if len(tb.Nodes) < 3 {
		t.Skip("SKIPPED: needs 3 nodes")
	}
	nonce := fmt.Sprint(time.Now().UnixNano())
	local := "benchctl-testbed/regtest:" + nonce
	id := importUnique(t, tb, "n1", local, "registry round trip "+nonce+"\n")
	t.Cleanup(func() { tb.RemoveImage(t, id) })

	for _, reg := range []struct{ name, addr string }{{"plain", tb.Registry}, {"auth", tb.AuthRegistry}} {
		t.Run(reg.name, func(t *testing.T) {
			ref := reg.addr + "/e2e/regtest:" + nonce
			digest := tb.PushToRegistry(t, "n1", local, ref)
			md, blobs := tb.RegistryManifest(t, ref)
			if md != digest || len(blobs) != 2 || blobs[0] != id {
				t.Fatalf("manifest %s with blobs %v; want %s with the config %s and one layer", md, blobs, digest, id)
			}
			tb.RemoveImageFrom(t, "n2", id) // cold: the previous subtest pulled it there

			before := tb.RegistryLogOffset(t, reg.addr)
			if reg.addr == tb.AuthRegistry {
				// Without credentials, or with a wrong password, the pull is refused and
				// fetches nothing.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				eng := tb.Engine(t, "n2")
				for _, auth := range []string{"", testbed.EncodeRegistryAuth(reg.addr, tb.AuthRegistryUser, "wrong")} {
					err := testbed.PullImage(ctx, eng, ref, auth)
					if err == nil {
						t.Fatalf("pull from %s with auth %q worked", reg.addr, auth)
					}
					t.Logf("refused as it should: %v", err)
				}
			}
			if got := tb.PullFromRegistry(t, "n2", ref); got != id {
				t.Fatalf("n2 pulled %s; want %s", got, id)
			}
			for _, b := range blobs {
				if n := tb.RegistryBlobGetsSince(t, reg.addr, before, b); n != 1 {
					t.Errorf("blob %s fetched %d times; want 1", b, n)
				}
			}
			// A second pull finds every layer on n2: nothing more is fetched.
			tb.PullFromRegistry(t, "n2", ref)
			for _, b := range blobs {
				if n := tb.RegistryBlobGetsSince(t, reg.addr, before, b); n != 1 {
					t.Errorf("after a warm pull, blob %s fetched %d times; want 1", b, n)
				}
			}
			if n := tb.RegistryBlobGets(t, reg.addr, blobs[1]); n != 1 {
				t.Errorf("the unique layer %s fetched %d times since the log began; want 1", blobs[1], n)
			}
		})
	}
}
