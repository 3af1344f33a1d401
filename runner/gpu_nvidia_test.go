//go:build cgo

package runner

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchctl/benchctl/workload/engine"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

// createRequest is the part of the Engine API's container create body this test reads.
type createRequest struct {
	Env        []string
	HostConfig struct {
		Devices        []container.DeviceMapping
		DeviceRequests []container.DeviceRequest
		GroupAdd       []string
	}
}

// createRecorder is an Engine API server on a unix socket that answers pings, lets the
// leftover-container remove find nothing, records the container create and refuses it:
// runContainer stops there, before anything would run.
func createRecorder(t *testing.T) (*client.Client, func() []createRequest) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rstub") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var creates []createRequest
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Header().Set("Api-Version", "1.44")
			w.Write([]byte("OK"))
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create"):
			var c createRequest
			if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
				t.Errorf("create body: %v", err)
			}
			mu.Lock()
			creates = append(creates, c)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"message":"stub engine: stop here"}`))
		default:
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"no such container"}`))
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	cl, err := client.New(client.WithHost("unix://"+ln.Addr().String()), client.WithAPIVersion("1.44"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, func() []createRequest {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(creates)
	}
}

// The NVIDIA device path end to end, from NVML (go-nvml's DGX H100 mock) to the Engine
// API's container create: the GPUs go in as one nvidia DeviceRequest naming them by UUID,
// with the gpu capability, NVIDIA_VISIBLE_DEVICES says the same, and benchctl sets no
// CUDA_VISIBLE_DEVICES (the container's CUDA numbers its GPUs from 0) and no device files.
func TestNVIDIADeviceRequestsReachTheEngine(t *testing.T) {
	nvmlMock := dgxh100.New()
	uuid := func(i int) string { return nvmlMock.Devices[i].(*server.Device).UUID }
	cases := []struct {
		name  string
		count int
		env   map[string]string
		want  []int
	}{
		{"count 2", 2, nil, []int{0, 1}},
		{"Slurm's job GPUs", 0, map[string]string{"SLURM_JOB_GPUS": "4,5"}, []int{4, 5}},
		{"Slurm's step GPUs over the job's", 2, map[string]string{"SLURM_JOB_GPUS": "0-7", "SLURM_STEP_GPUS": "6,7"}, []int{6, 7}},
		{"count 2 of Slurm's four", 2, map[string]string{"SLURM_JOB_GPUS": "2-5"}, []int{2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := gpu.WithNVML(gpu.Options{SysfsRoot: t.TempDir()}, nvmlMock)
			acc, err := selectGPUs(manifest.GPU{Vendor: "nvidia", Count: manifest.Count(c.count)}, testutil.LookupOf(c.env), opts, "/nonexistent/group")
			if err != nil {
				t.Fatal(err)
			}
			m := &manifest.Manifest{Name: "t", Container: manifest.Container{Network: "host", IPC: "host"}}
			b := manifest.Benchmark{Name: "allreduce", Command: []string{"/bench/run"}}
			n := Node{JobID: "77", Rank: 0, World: 1, Host: "n1", MasterAddr: "n1", MasterPort: 29500}
			spec := BuildSpec(m, b, n, "img:1", "k", t.TempDir(), acc, []string{"CUDA_VISIBLE_DEVICES=3"})

			eng, creates := createRecorder(t)
			res := runContainer(context.Background(), engine.New(eng), spec, time.Minute, testFiles(t, "b"), io.Discard, testBudget, nil)
			if res.Err == nil || !strings.Contains(res.Err.Error(), "stub engine: stop here") {
				t.Fatalf("runContainer: %+v", res)
			}
			got := creates()
			if len(got) != 1 {
				t.Fatalf("%d creates", len(got))
			}
			var ids []string
			for _, i := range c.want {
				ids = append(ids, uuid(i))
			}
			want := []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: ids, Capabilities: [][]string{{"gpu"}}}}
			hc := got[0].HostConfig
			if !reqEqual(hc.DeviceRequests, want) || len(hc.Devices) != 0 || len(hc.GroupAdd) != 0 {
				t.Fatalf("HostConfig %+v\nwant DeviceRequests %+v", hc, want)
			}
			var visible []string
			for _, e := range got[0].Env {
				if strings.HasPrefix(e, "NVIDIA_VISIBLE_DEVICES=") || strings.HasPrefix(e, "CUDA_VISIBLE_DEVICES=") {
					visible = append(visible, e)
				}
			}
			if w := []string{"NVIDIA_VISIBLE_DEVICES=" + strings.Join(ids, ",")}; !slices.Equal(visible, w) {
				t.Fatalf("env %q, want %q", visible, w)
			}
		})
	}
}

func reqEqual(a, b []container.DeviceRequest) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Driver != y.Driver || x.Count != y.Count || !slices.Equal(x.DeviceIDs, y.DeviceIDs) || len(x.Options) != len(y.Options) ||
			len(x.Capabilities) != len(y.Capabilities) {
			return false
		}
		for j := range x.Capabilities {
			if !slices.Equal(x.Capabilities[j], y.Capabilities[j]) {
				return false
			}
		}
	}
	return true
}
