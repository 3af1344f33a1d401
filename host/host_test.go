//go:build linux

package host

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func fixture(name string) string { return filepath.Join("..", "tests", "fixtures", "host", name) }

func noSlurm(string) (string, bool) { return "", false }

// copyTree copies a fixture into a temporary folder (links kept) so a test can add to it.
func copyTree(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", fixture(name), dst).CombinedOutput(); err != nil {
		t.Fatalf("copying the fixture: %v: %s", err, out)
	}
	return dst
}

func TestReadH100(t *testing.T) {
	f := Read(context.Background(), Options{Root: fixture("h100"), Lookup: noSlurm, Hostname: "gpu01"})
	if len(f.Unavailable) != 0 {
		t.Fatalf("unavailable: %v", f.Unavailable)
	}
	if f.Hostname != "gpu01" || f.Kernel.Release != "5.15.0-105-generic" || !strings.HasPrefix(f.Kernel.Version, "#115-Ubuntu") {
		t.Errorf("hostname/kernel: %q %+v", f.Hostname, f.Kernel)
	}
	if f.OS != (OS{PrettyName: "Ubuntu 22.04.4 LTS", ID: "ubuntu", VersionID: "22.04"}) {
		t.Errorf("os: %+v", f.OS)
	}
	if f.CPU != (CPU{Model: "Intel(R) Xeon(R) Platinum 8480+", Sockets: 2, Cores: 112, Threads: 224}) {
		t.Errorf("cpu: %+v", f.CPU)
	}
	if f.MemoryBytes != 2113442304*1024 {
		t.Errorf("memory: %d", f.MemoryBytes)
	}
	if len(f.NUMA) != 2 || f.NUMA[1] != (NUMANode{ID: 1, CPUs: "56-111,168-223", MemoryBytes: 1056721152 * 1024}) {
		t.Errorf("numa: %+v", f.NUMA)
	}
	if len(f.Network) != 5 {
		t.Fatalf("network: %+v", f.Network)
	}
	ib, roce := f.Network[0], f.Network[4]
	if ib.Name != "mlx5_0" || ib.Firmware != "28.39.1002" || ib.BoardID != "MT_0000000838" || ib.Kind() != "InfiniBand" ||
		len(ib.Ports) != 1 || ib.Ports[0] != (Port{Number: 1, State: "ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}) ||
		len(ib.NetDevices) != 1 || ib.NetDevices[0] != "ib0" {
		t.Errorf("mlx5_0: %+v", ib)
	}
	if roce.Kind() != "RoCE" || roce.Ports[0].Rate != "200 Gb/sec (2X NDR)" || roce.NetDevices[0] != "enp65s0f0np0" {
		t.Errorf("mlx5_4: %+v", roce)
	}
	if f.Slurm != "not under Slurm" {
		t.Errorf("slurm: %q", f.Slurm)
	}
}

func TestReadMinimal(t *testing.T) {
	f := Read(context.Background(), Options{Root: fixture("minimal"), Lookup: noSlurm, Hostname: "a"})
	if f.OS.ID != "debian" || f.OS.VersionID != "12" {
		t.Errorf("os from /usr/lib/os-release: %+v", f.OS)
	}
	if f.CPU != (CPU{Model: "Neoverse-N1 test board", Sockets: 1, Cores: 4, Threads: 4}) {
		t.Errorf("cpu from sysfs topology: %+v", f.CPU)
	}
	if len(f.Network) != 0 || f.Network == nil {
		t.Errorf("no /sys/class/infiniband is no devices, as []: %#v", f.Network)
	}
	if _, ok := f.Unavailable["network"]; ok {
		t.Errorf("no RDMA devices is not unavailable: %v", f.Unavailable)
	}
	if !strings.Contains(f.Unavailable["numa"], "no such file") {
		t.Errorf("numa: %q", f.Unavailable["numa"])
	}
}

// TestReadBroken: every malformed or missing file is a reason under its field, never a
// panic, a hang or a value made up.
func TestReadBroken(t *testing.T) {
	root := copyTree(t, "broken")
	// A FIFO where the kernel version should be: refused without blocking.
	if err := syscall.Mkfifo(filepath.Join(root, "proc", "sys", "kernel", "version"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan Facts, 1)
	go func() { done <- Read(context.Background(), Options{Root: root, Lookup: noSlurm, Hostname: "b"}) }()
	var f Facts
	select {
	case f = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Read hung (on the FIFO?)")
	}
	want := map[string]string{
		"kernel":  "FIFO",
		"cpu":     "names no model or no processor",
		"memory":  "no MemTotal",
		"numa":    "meminfo",
		"network": "fw_ver",
	}
	for field, part := range want {
		if !strings.Contains(f.Unavailable[field], part) {
			t.Errorf("unavailable[%s] = %q, want it to say %q", field, f.Unavailable[field], part)
		}
	}
	if len(f.OS.PrettyName) > MaxValue || !strings.HasSuffix(f.OS.PrettyName, "…") {
		t.Errorf("a 6,000-character PRETTY_NAME is cut to %d bytes: got %d", MaxValue, len(f.OS.PrettyName))
	}
	if f.MemoryBytes != 0 || f.CPU.Threads != 0 {
		t.Errorf("values made up: %+v %d", f.CPU, f.MemoryBytes)
	}
	if len(f.Network) != 1 || f.Network[0].Ports[0].Rate != "" || f.Network[0].Ports[0].State != "ACTIVE" {
		t.Errorf("the device is kept with what could be read: %+v", f.Network)
	}
}

func TestReadMissingRoot(t *testing.T) {
	f := Read(context.Background(), Options{Root: filepath.Join(t.TempDir(), "none"), Lookup: noSlurm, Hostname: "x"})
	for _, field := range []string{"kernel", "os", "cpu", "memory", "numa"} {
		if f.Unavailable[field] == "" {
			t.Errorf("%s: no reason given", field)
		}
	}
	if f.NUMA == nil || f.Network == nil {
		t.Error("lists are [] not null")
	}
}

func TestHugeCPUInfoIsRefused(t *testing.T) {
	root := copyTree(t, "minimal")
	big := strings.Repeat("processor\t: 1\nmodel name\t: x\n", maxCPUInfo/20)
	if err := os.WriteFile(filepath.Join(root, "proc", "cpuinfo"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Read(context.Background(), Options{Root: root, Lookup: noSlurm, Hostname: "x"})
	if !strings.Contains(f.Unavailable["cpu"], "limit") {
		t.Errorf("cpu: %q", f.Unavailable["cpu"])
	}
}

func TestSlurmVersion(t *testing.T) {
	inSlurm := func(k string) (string, bool) {
		if k == "SLURM_JOB_ID" {
			return "42", true
		}
		return "", false
	}
	var got []string
	run := func(_ context.Context, name string, args ...string) ([]byte, error) {
		got = append([]string{name}, args...)
		return []byte("slurm 22.05.8\n"), nil
	}
	f := Read(context.Background(), Options{Root: fixture("minimal"), Lookup: inSlurm, Run: run, Hostname: "x"})
	if f.Slurm != "slurm 22.05.8" || strings.Join(got, " ") != "srun --version" {
		t.Errorf("slurm %q from %q", f.Slurm, got)
	}
	hang := func(ctx context.Context, _ string, _ ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	f = Read(ctx, Options{Root: fixture("minimal"), Lookup: inSlurm, Run: hang, Hostname: "x"})
	if f.Slurm != "" || !strings.Contains(f.Unavailable["slurm"], "did not answer") {
		t.Errorf("a hanging srun: %q %q", f.Slurm, f.Unavailable["slurm"])
	}
	fail := func(context.Context, string, ...string) ([]byte, error) {
		return nil, errors.New("exec: \"srun\": executable file not found in $PATH")
	}
	f = Read(context.Background(), Options{Root: fixture("minimal"), Lookup: inSlurm, Run: fail, Hostname: "x"})
	if !strings.Contains(f.Unavailable["slurm"], "not found") {
		t.Errorf("no srun: %q", f.Unavailable["slurm"])
	}
}

func TestRunBoundedKeepsLittle(t *testing.T) {
	out, err := runBounded(context.Background(), "head", "-c", "1000000", "/dev/zero")
	if err != nil || len(out) != maxFile {
		t.Fatalf("kept %d bytes (%v), want %d", len(out), err, maxFile)
	}
}

func TestCut(t *testing.T) {
	s := strings.Repeat("é", 300)
	c := cut(s)
	if len(c) > MaxValue || !strings.HasSuffix(c, "…") || strings.ContainsRune(c, '\uFFFD') {
		t.Errorf("cut at a rune boundary: %d %q", len(c), c[len(c)-8:])
	}
	if cut("a\xffb") != "a\uFFFDb" {
		t.Error("invalid UTF-8 is replaced")
	}
}

// A FIFO where a folder should be (/sys/class/infiniband, a NUMA node folder) is refused
// without blocking: listing a folder must not open a FIFO for reading.
func TestFIFOInPlaceOfAFolder(t *testing.T) {
	root := copyTree(t, "h100")
	ib := filepath.Join(root, "sys", "class", "infiniband")
	if err := os.RemoveAll(ib); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(ib, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan Facts, 1)
	go func() { done <- Read(context.Background(), Options{Root: root, Lookup: noSlurm, Hostname: "x"}) }()
	select {
	case f := <-done:
		if !strings.Contains(f.Unavailable["network"], "FIFO") {
			t.Errorf("network: %q", f.Unavailable["network"])
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Read hung on a FIFO in place of /sys/class/infiniband")
	}
}
