//go:build linux

package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/host"
	"github.com/benchctl/benchctl/jobdir"
)

func doctorRec(driver, vbios, ibfw string) *jobdir.NodeRecord {
	return &jobdir.NodeRecord{
		Machine: host.Facts{Kernel: host.Kernel{Release: "k"}, Network: []host.NetDevice{{Name: "mlx5_0", Firmware: ibfw}}},
		GPU: jobdir.GPURecord{Vendor: "nvidia", Driver: driver, Runtime: "12.4",
			Devices: []jobdir.GPUDevice{{Index: 0, Name: "H100", Firmware: []jobdir.NamedVersion{{Name: "VBIOS", Version: vbios}}}}}}
}

func TestAgreementCheck(t *testing.T) {
	hosts := []string{"n1", "n2", "n3"}
	write := func(t *testing.T, recs ...*jobdir.NodeRecord) string {
		dir := t.TempDir()
		for r, rec := range recs {
			if rec != nil {
				if err := writeDoctorRecord(dir, r, rec); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dir
	}
	ok := agreementCheck(write(t, doctorRec("550.1", "96.00", "28.39"), doctorRec("550.1", "96.00", "28.39"), doctorRec("550.1", "96.00", "28.39")), hosts)
	if !ok.OK || !strings.Contains(ok.Detail, "all 3 nodes agree on 4 ") {
		t.Errorf("agree: %+v", ok)
	}
	// A kernel that differs is not doctor's business here (collect reports it); the driver,
	// a GPU's VBIOS and an HCA's firmware are.
	odd := doctorRec("535.9", "96.01", "28.39")
	odd.Machine.Kernel.Release = "other"
	bad := agreementCheck(write(t, doctorRec("550.1", "96.00", "28.39"), doctorRec("550.1", "96.00", "28.39"), odd), hosts)
	if bad.OK || !strings.Contains(bad.Detail, "gpu.driver: rank 2 (n3): 535.9; ranks 0-1: 550.1") ||
		!strings.Contains(bad.Detail, "gpu0.firmware.VBIOS") || strings.Contains(bad.Detail, "kernel") || strings.Contains(bad.Detail, "mlx5_0") || bad.Fix == "" {
		t.Errorf("differ: %+v", bad)
	}
	noIB := doctorRec("550.1", "96.00", "")
	noIB.Machine.Network = nil
	absent := agreementCheck(write(t, doctorRec("550.1", "96.00", "28.39"), doctorRec("550.1", "96.00", "28.39"), noIB), hosts)
	if absent.OK || !strings.Contains(absent.Detail, "net.mlx5_0.firmware: 1 of 3 nodes: (unavailable) or absent; ranks 0-1: 28.39") {
		t.Errorf("a node without the HCA: %+v", absent)
	}
	// A node's megabyte of a driver version is one short value in the line.
	huge := doctorRec(strings.Repeat("5", 1<<20), "96.00", "28.39")
	long := agreementCheck(write(t, doctorRec("550.1", "96.00", "28.39"), doctorRec("550.1", "96.00", "28.39"), huge), hosts)
	if long.OK || len(long.Detail) > 1000 {
		t.Errorf("a 1 MiB driver version gave a line of %d bytes", len(long.Detail))
	}
	// A missing record, or one that is a FIFO, is said, never waited on.
	dir := write(t, doctorRec("550.1", "96.00", "28.39"), nil, doctorRec("550.1", "96.00", "28.39"))
	if err := syscall.Mkfifo(jobdir.DoctorRecord(dir, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	miss := agreementCheck(dir, hosts)
	if miss.OK || !strings.Contains(miss.Detail, "n2: ") || !strings.Contains(miss.Detail, "FIFO") {
		t.Errorf("missing: %+v", miss)
	}
	os.Remove(jobdir.DoctorRecord(dir, 1))
	if err := os.Symlink(filepath.Join(dir, "rank-0.json"), jobdir.DoctorRecord(dir, 1)); err != nil {
		t.Fatal(err)
	}
	if c := agreementCheck(dir, hosts); c.OK || !strings.Contains(c.Detail, "symbolic link") {
		t.Errorf("a linked record: %+v", c)
	}
}

func TestRecordCheckSaysKeyFacts(t *testing.T) {
	rec := doctorRec("550.1", "96.00", "28.39")
	rec.Machine.Unavailable = map[string]string{"numa": "no such file"}
	rec.Unavailable = map[string]string{"gpu.topology": "not read"}
	c := recordCheck(rec)
	if !c.OK || c.Record != rec || !strings.Contains(c.Detail, "kernel k") || !strings.Contains(c.Detail, "1 GPU (H100), driver 550.1") ||
		!strings.Contains(c.Detail, "not readable: gpu.topology, numa") {
		t.Errorf("%+v", c)
	}
}
