package noderecord

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

type fakeVersioner struct {
	v   client.ServerVersionResult
	err error
}

func (f fakeVersioner) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return f.v, f.err
}

func env(kv ...string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

func TestGatherRecord(t *testing.T) {
	inv := gpu.Inventory{Vendor: gpu.VendorAMD, Driver: "6.8.5", Runtime: "6.2.0", Source: gpu.SourceSysfs,
		GPUs: []gpu.GPU{{Index: 0, Name: "MI300X", Arch: "gfx942", PCIBusID: "0000:05:00.0"}, {Index: 1, Name: "MI300X", Arch: "gfx942", PCIBusID: "0000:06:00.0"}}}
	state := inv
	state.GPUs = []gpu.GPU{{PCIBusID: "0000:06:00.0", SMI: &gpu.SMI{Firmware: []gpu.Firmware{{Name: "SMC", Version: "0x55"}}}}}
	s := Sources{Lookup: env(), HostRoot: filepath.Join("..", "..", "tests", "fixtures", "host", "h100"), Vendor: gpu.VendorAuto, Version: "v9",
		Engine: fakeVersioner{v: client.ServerVersionResult{Platform: client.PlatformInfo{Name: "Docker Engine - Community"}, Version: "20.10.24", APIVersion: "1.41",
			Components: []system.ComponentVersion{{Name: "containerd", Version: "1.6.20"}}}},
		Detect:   func(context.Context, gpu.Options) (gpu.Inventory, error) { return inv, nil },
		Snapshot: func(context.Context, gpu.Options) (gpu.Inventory, error) { return state, nil }}
	rec := Gather(context.Background(), s)
	if rec.Machine.Kernel.Release != "5.15.0-105-generic" || rec.Benchctl != "v9" {
		t.Errorf("machine: %+v", rec.Machine.Kernel)
	}
	if rec.GPU.Driver != "6.8.5" || len(rec.GPU.Devices) != 2 || len(rec.GPU.Devices[1].Firmware) != 1 || len(rec.GPU.Devices[0].Firmware) != 0 {
		t.Errorf("gpus: %+v", rec.GPU)
	}
	if rec.Engine.Version != "20.10.24" || rec.Engine.Components[0].Name != "containerd" {
		t.Errorf("engine: %+v", rec.Engine)
	}
	if rec.Unavailable["gpu.topology"] == "" || rec.Unavailable["engine"] != "" {
		t.Errorf("unavailable: %v", rec.Unavailable)
	}

	// Nothing answers: the record still comes back, and says why for each.
	s.Engine = fakeVersioner{err: errors.New("connection refused")}
	s.Detect = func(context.Context, gpu.Options) (gpu.Inventory, error) {
		return gpu.Inventory{}, errors.New("sysfs unreadable")
	}
	s.HostRoot = t.TempDir()
	rec = Gather(context.Background(), s)
	for _, k := range []string{"engine", "gpu"} {
		if !strings.Contains(rec.Unavailable[k], map[string]string{"engine": "connection refused", "gpu": "sysfs unreadable"}[k]) {
			t.Errorf("unavailable[%s] = %q", k, rec.Unavailable[k])
		}
	}
	if rec.Machine.Unavailable["kernel"] == "" || rec.Images == nil || rec.GPU.Devices == nil {
		t.Errorf("record: %+v", rec)
	}
	s.Engine = nil
	s.Vendor = gpu.VendorNone
	rec = Gather(context.Background(), s)
	if rec.GPU.Vendor != gpu.VendorNone || rec.Unavailable["gpu"] != "" || rec.Unavailable["engine"] == "" {
		t.Errorf("vendor none, no engine: %+v %v", rec.GPU, rec.Unavailable)
	}
}

func TestHostRootHook(t *testing.T) {
	for _, c := range []struct {
		val  string
		rank int
		want string
	}{
		{"2:/t/h100", 2, "/t/h100"},
		{"2:/t/h100", 1, ""},
		{"x:/t", 0, ""},
		{"0:", 0, ""},
		{"/t/h100", 0, ""},
		{"0:/a:b", 0, "/a:b"},
	} {
		if got := HostRoot(env(TestHostRootVar, c.val), c.rank); got != c.want {
			t.Errorf("%q rank %d: %q, want %q", c.val, c.rank, got, c.want)
		}
	}
	if HostRoot(env(), 0) != "" {
		t.Error("unset")
	}
}

// Facts is the engine's, as its runtime tells them.
func (f fakeVersioner) Facts(ctx context.Context) (workload.Facts, error) {
	return engine.Facts(ctx, f)
}
