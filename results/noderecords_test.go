package results

import (
	"fmt"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/host"
	"github.com/benchctl/benchctl/jobdir"
)

// record is a node record as three nodes of one kind would write it.
func record(rank int, kernel string) *jobdir.NodeRecord {
	return &jobdir.NodeRecord{Rank: rank, Host: fmt.Sprintf("h%d", rank),
		Machine: host.Facts{Hostname: fmt.Sprintf("host%d.example", rank), Kernel: host.Kernel{Release: kernel, Version: "#1 SMP"},
			OS: host.OS{PrettyName: "Ubuntu 22.04.4 LTS"}, MemoryBytes: 2 << 40,
			Network: []host.NetDevice{{Name: "mlx5_0", Firmware: "28.39.1002", NodeGUID: fmt.Sprintf("guid%d", rank),
				Ports: []host.Port{{Number: 1, State: "ACTIVE", Rate: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"}}}}},
		GPU:      jobdir.GPURecord{Vendor: "amd", Driver: "6.8.5", Devices: []jobdir.GPUDevice{{Index: 0, Name: "MI300X", Arch: "gfx942", PCIBusID: fmt.Sprintf("0000:%02x:00.0", rank)}}},
		Benchctl: "v1"}
}

// 10,000 nodes: rank 7's kernel differs, every 1,000th node has another firmware, 300
// nodes lack an RDMA device. The notes stay one short line per field, and naming stops.
func TestNodeRecordDiffsOf10000Nodes(t *testing.T) {
	var ra recordAgg
	for r := range 10_000 {
		rec := record(r, "6.1.0")
		if r == 7 {
			rec.Machine.Kernel.Release = "5.15.0"
		}
		if r%1000 == 0 {
			rec.Machine.Network[0].Firmware = fmt.Sprintf("28.%d", r)
		}
		if r >= 9000 && r < 9300 {
			rec.Machine.Network = nil
		}
		ra.add(&nodeData{rank: r, host: fmt.Sprintf("h%d", r), nodeRec: rec})
	}
	for r := 10_000; r < 10_500; r++ {
		ra.add(&nodeData{rank: r, host: "x"})
	}
	nr := ra.finish(func(r int) string { return fmt.Sprintf("h%d", r) })
	if nr.Nodes != 10_000 || nr.WithoutCount != 500 || len(nr.Without) != maxListedRecords || nr.Without[0].Rank != 10_000 {
		t.Errorf("counts: %d %d %d", nr.Nodes, nr.WithoutCount, len(nr.Without))
	}
	notes := RecordNotes(nr)
	var fw string
	for _, n := range notes {
		if len(n) > 2000 {
			t.Errorf("a note of %d characters", len(n))
		}
		if strings.HasPrefix(n, "node record differs: net.mlx5_0.firmware:") {
			fw = n
		}
	}
	if !strings.Contains(strings.Join(notes, "\n"), "kernel: ranks 0-6,8-9999: 6.1.0 #1 SMP; rank 7 (h7): 5.15.0 #1 SMP") {
		t.Errorf("kernel note: %q", notes)
	}
	// 9,690 nodes with 28.39.1002, 300 without the device, 10 odd values (9 listed of which 7 fit, then "more values").
	if !strings.Contains(fw, "ranks 1-999,1001-1999,") || !strings.Contains(fw, "(absent)") || !strings.Contains(fw, "more values") {
		t.Errorf("firmware note: %q", fw)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "no node record (node.json) from 500 nodes: 10000-x, ") {
		t.Errorf("without: %q", notes[len(notes)-1])
	}
}

// A record with thousands of made-up fields cannot make collect compare without bound.
func TestNodeRecordFieldsAreBounded(t *testing.T) {
	var ra recordAgg
	rec := record(0, "k")
	for i := range 5000 {
		rec.Engine.Components = append(rec.Engine.Components, jobdir.NamedVersion{Name: fmt.Sprintf("c%d", i), Version: "1"})
	}
	ra.add(&nodeData{rank: 0, nodeRec: rec})
	ra.add(&nodeData{rank: 1, nodeRec: record(1, "k")})
	nr := ra.finish(func(int) string { return "" })
	if len(ra.order) != maxRecordFields || nr.FieldsCapped == 0 || len(nr.Differs) > maxRecordFields {
		t.Errorf("fields %d, capped %d, differs %d", len(ra.order), nr.FieldsCapped, len(nr.Differs))
	}
	// Rank 1 lacks almost 2,000 of rank 0's fields: the table names 20, then says how many more.
	notes := RecordNotes(nr)
	if len(nr.Differs) < 1000 || len(notes) != maxNoteFields+2 || !strings.Contains(notes[maxNoteFields], "more fields differ") {
		t.Errorf("%d differences gave %d notes: %q", len(nr.Differs), len(notes), notes[len(notes)-2:])
	}
}

// A record's values and field names are data a node wrote: a 1 MiB kernel release or
// device name is kept short in what collect keeps and writes (10,000 such nodes would
// otherwise hold 10 GiB).
func TestNodeRecordLongValuesAreCut(t *testing.T) {
	var ra recordAgg
	long := strings.Repeat("k", 1<<20)
	rec := record(0, long)
	rec.Machine.Network[0].Name = strings.Repeat("d", 1<<20)
	ra.add(&nodeData{rank: 0, nodeRec: rec})
	ra.add(&nodeData{rank: 1, nodeRec: record(1, "6.1.0")})
	nr := ra.finish(func(int) string { return "" })
	for _, d := range nr.Differs {
		if len(d.Field) > 2*maxRecordText {
			t.Errorf("a field name of %d bytes", len(d.Field))
		}
		for _, v := range d.Values {
			if len(v.Value) > 2*maxRecordText {
				t.Errorf("%.20s: a value of %d bytes", d.Field, len(v.Value))
			}
		}
	}
	for name, fa := range ra.fields {
		for v := range fa.values {
			if len(name)+len(v) > 4*maxRecordText {
				t.Fatalf("kept %d bytes for one value", len(name)+len(v))
			}
		}
	}
}
