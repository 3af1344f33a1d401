package jobdir_test

import (
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/hostfacts"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

func sampleRecord() *jobdir.NodeRecord {
	return &jobdir.NodeRecord{Job: "7", Rank: 1, Host: "n2",
		Machine: hostfacts.Facts{Hostname: "n2", Kernel: hostfacts.Kernel{Release: "6.1.0-18-amd64", Version: "#1 SMP"},
			OS: hostfacts.OS{PrettyName: "Debian GNU/Linux 12 (bookworm)"}, MemoryBytes: 503<<30 + 12<<20,
			Network:     []hostfacts.NetDevice{{Name: "mlx5_0", Firmware: "28.39.1002", Ports: []hostfacts.Port{{Number: 1, State: "ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}}},
			Unavailable: map[string]string{"cpu": "reading /proc/cpuinfo: permission denied"}},
		GPU: jobdir.GPURecord{Vendor: "nvidia", Driver: "580.159.04", Runtime: "13.0",
			Devices: []jobdir.GPUDevice{{Index: 0, Name: "NVIDIA H200", Arch: "sm_90", Firmware: []jobdir.NamedVersion{{Name: "VBIOS", Version: "96.00.AF.00.01"}}}}},
		Engine:      jobdir.EngineRecord{Name: "Docker Engine - Community", Version: "20.10.24", APIVersion: "1.41", Components: []jobdir.NamedVersion{{Name: "containerd", Version: "1.6.20"}}},
		Images:      []jobdir.ImageRecord{{Name: "bench:1", ID: "sha256:abc"}},
		Benchctl:    "v1.2.3",
		Unavailable: map[string]string{"gpu.topology": "not read"}}
}

func TestNodeRecordRoundTripAndFields(t *testing.T) {
	l := jobdir.Layout{Shared: t.TempDir()}
	job, err := l.CreateJob("7", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	nf, err := job.CreateNode(1, "n2")
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	if err := nf.WriteNodeRecord(sampleRecord()); err != nil {
		t.Fatal(err)
	}
	var r safefile.Reader
	got, err := jobdir.ReadNodeRecord(&r, nf.NodeRecord())
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != jobdir.NodeRecordVersion || got.GPU.Devices[0].Firmware[0].Version != "96.00.AF.00.01" {
		t.Fatalf("read back: %+v", got)
	}
	want := map[string]string{
		"kernel":              "6.1.0-18-amd64 #1 SMP",
		"cpu":                 jobdir.Unreadable,
		"memory":              "503 GiB",
		"net.mlx5_0.port1":    "ACTIVE 400 Gb/sec (4X NDR) InfiniBand",
		"gpu.models":          "1 x NVIDIA H200 (sm_90)",
		"gpu0.firmware.VBIOS": "96.00.AF.00.01",
		"engine":              "Docker Engine - Community 20.10.24 (API 1.41)",
		"engine.containerd":   "1.6.20",
		"image.bench:1":       "sha256:abc",
	}
	seen := map[string]bool{}
	for _, f := range got.Fields() {
		if seen[f.Name] {
			t.Errorf("field %s twice", f.Name)
		}
		seen[f.Name] = true
		if w, ok := want[f.Name]; ok && f.Value != w {
			t.Errorf("%s = %q, want %q", f.Name, f.Value, w)
		}
		if f.Name == "hostname" || strings.Contains(f.Value, "n2") {
			t.Errorf("a per-node fact is compared: %+v", f)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("no field %s", k)
		}
	}
}

func TestRankRanges(t *testing.T) {
	for _, c := range []struct {
		in   []int32
		want string
	}{
		{[]int32{0, 1, 2, 5, 7, 8}, "0-2,5,7-8"},
		{[]int32{3}, "3"},
		{[]int32{0, 2, 4, 6}, "0,2 and 2 more"},
	} {
		max := 8
		if len(c.in) == 4 {
			max = 2
		}
		if got := jobdir.RankRanges(c.in, max); got != c.want {
			t.Errorf("%v: %q, want %q", c.in, got, c.want)
		}
	}
}
