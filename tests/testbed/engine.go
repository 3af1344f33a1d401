package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	units "github.com/docker/go-units"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/benchctl/benchctl/image"
)

// Engine connects to one node's Docker Engine.
func (tb *Testbed) Engine(t testing.TB, node string) *client.Client {
	t.Helper()
	c, err := client.New(client.WithHost(tb.Sockets[node]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// CountingEngine wraps an engine and counts the calls that do real work.
type CountingEngine struct {
	image.Engine
	Builds, Saves, Loads atomic.Int32
}

func (c *CountingEngine) ImageBuild(ctx context.Context, r io.Reader, o client.ImageBuildOptions) (client.ImageBuildResult, error) {
	c.Builds.Add(1)
	return c.Engine.ImageBuild(ctx, r, o)
}

func (c *CountingEngine) ImageSave(ctx context.Context, ids []string, o ...client.ImageSaveOption) (client.ImageSaveResult, error) {
	c.Saves.Add(1)
	return c.Engine.ImageSave(ctx, ids, o...)
}

func (c *CountingEngine) ImageLoad(ctx context.Context, r io.Reader, o ...client.ImageLoadOption) (client.ImageLoadResult, error) {
	c.Loads.Add(1)
	return c.Engine.ImageLoad(ctx, r, o...)
}

// HelloContext writes a build context with a static hello program and returns the folder.
// The program prints "hello <args>" and its NODE_RANK.
func HelloContext(t testing.TB, dir string, extraFiles map[string][]byte) string {
	t.Helper()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte(`package main

import ("fmt"; "os"; "strings")

func main() {
	if len(os.Args) > 1 && os.Args[1] == "failhuge" {
		// 300 lines of output, then a 10,000-character error line, then the reason.
		for i := range 300 {
			fmt.Println("hello output line", i)
		}
		fmt.Fprintln(os.Stderr, "hello error: "+strings.Repeat("x", 10000))
		fmt.Fprintln(os.Stderr, "hello is failing on purpose")
		os.Exit(7)
	}
	if len(os.Args) > 1 && os.Args[1] == "fail" {
		// More stdout than a build log tail holds, then the reason on stderr: engines forward
		// the two streams in no fixed order, and the tail must keep the reason.
		for i := range 40 {
			fmt.Println("hello output line", i)
		}
		fmt.Fprintln(os.Stderr, "hello is failing on purpose")
		os.Exit(7)
	}
	fmt.Println("hello", strings.Join(os.Args[1:], " "), "rank", os.Getenv("NODE_RANK"))
}
`), 0o644)
	ctxDir := filepath.Join(dir, "ctx")
	os.MkdirAll(ctxDir, 0o755)
	cmd := exec.Command("go", "build", "-o", filepath.Join(ctxDir, "hello"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hello: %v\n%s", err, out)
	}
	df := "FROM scratch\nARG CACHE_BUST\nCOPY . /\nCMD [\"/hello\"]\n"
	os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644)
	for name, data := range extraFiles {
		os.WriteFile(filepath.Join(ctxDir, name), data, 0o644)
	}
	return ctxDir
}

// WriteManifest writes a manifest building ctxDir with a unique CACHE_BUST, so every test
// gets its own key.
func WriteManifest(t testing.TB, ctxDir, name string) string {
	t.Helper()
	bust := fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())
	body := fmt.Sprintf("name: %s\nimage:\n  dockerfile: Dockerfile\n  buildArgs: {CACHE_BUST: %q}\ngpu: {vendor: none}\nbenchmarks: [{name: hello, command: [/hello, world]}]\n", name, bust)
	p := filepath.Join(ctxDir, "benchmark.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// RunImage runs an image once on an engine (host network) and returns its output. On a
// Podman engine the container asks for this process's hard nofile and nproc limits, as
// benchctl's do: Podman's defaults (1048576, 4194304) cannot be set where the hard limits
// are lower and cannot be raised.
func RunImage(t testing.TB, eng *client.Client, ref string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &container.HostConfig{NetworkMode: "host"}
	if id, err := image.Identify(ctx, eng); err == nil && id.Podman() {
		hc.Ulimits = hardLimits(id.PID)
	}
	created, err := eng.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: ref, Cmd: cmd},
		HostConfig: hc,
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	defer eng.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := eng.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	wait := eng.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{})
	select {
	case err := <-wait.Error:
		t.Fatalf("wait: %v", err)
	case <-wait.Result:
	}
	logs, err := eng.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	defer logs.Close()
	data, _ := io.ReadAll(logs)
	// Strip the 8-byte stream headers of the multiplexed log stream.
	var out strings.Builder
	for len(data) >= 8 {
		n := int(data[4])<<24 | int(data[5])<<16 | int(data[6])<<8 | int(data[7])
		if 8+n > len(data) {
			break
		}
		out.Write(data[8 : 8+n])
		data = data[8+n:]
	}
	return out.String()
}

// hardLimits are the lower of this process's and the engine process's (pid, where known)
// finite hard nofile and nproc limits, as container ulimits: the engine's runtime cannot
// give more than it has.
func hardLimits(pid int) []*units.Ulimit {
	var engine []byte
	if pid > 0 {
		engine, _ = os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	}
	var out []*units.Ulimit
	for name, lim := range map[string]struct {
		res   int
		label string
	}{"nofile": {unix.RLIMIT_NOFILE, "Max open files"}, "nproc": {unix.RLIMIT_NPROC, "Max processes"}} {
		var l unix.Rlimit
		if unix.Getrlimit(lim.res, &l) != nil {
			continue
		}
		hard := l.Max
		for line := range strings.SplitSeq(string(engine), "\n") {
			if rest, ok := strings.CutPrefix(line, lim.label+" "); ok {
				if f := strings.Fields(rest); len(f) >= 2 {
					if v, err := strconv.ParseUint(f[1], 10, 64); err == nil && v < hard {
						hard = v
					}
				}
			}
		}
		if hard != unix.RLIM_INFINITY {
			out = append(out, &units.Ulimit{Name: name, Soft: int64(hard), Hard: int64(hard)})
		}
	}
	return out
}
