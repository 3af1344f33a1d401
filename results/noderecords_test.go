package results

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/host"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
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

func TestCollectReportsWhatDiffersBetweenNodeRecords(t *testing.T) {
	shared := t.TempDir()
	job := writeJob(t, shared, "9", 4)
	csv := "model,performance,metric,status\nm,10,x,SUCCESS\n"
	for r := range 4 {
		writeNode(t, job, r, jobdir.OutcomeSuccess, csv)
	}
	jobdirtest.NodeRecord(t, nodeOf(job, 0), record(0, "6.1.0-18-amd64"))
	jobdirtest.NodeRecord(t, nodeOf(job, 1), record(1, "6.1.0-18-amd64"))
	slow := record(2, "5.15.0-105-generic")
	slow.Machine.Network[0].Ports[0].Rate = "200 Gb/sec (4X HDR)"
	jobdirtest.NodeRecord(t, nodeOf(job, 2), slow)
	// rank 3 wrote none.

	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "9", Attempt: -1})
	if err != nil {
		t.Fatal(err)
	}
	nr := col.Summary.NodeRecords
	if nr.Nodes != 3 || nr.WithoutCount != 1 || nr.Without[0].Rank != 3 || nr.Without[0].Why != "no node.json" {
		t.Errorf("nodes with and without a record: %+v", nr)
	}
	got := map[string]FieldDiff{}
	for _, d := range nr.Differs {
		got[d.Field] = d
	}
	if len(got) != 2 {
		t.Errorf("differs: want kernel and net.mlx5_0.port1 only (hostnames, GUIDs and PCI addresses are not compared), got %+v", nr.Differs)
	}
	k := got["kernel"]
	if len(k.Values) != 2 || k.Values[0] != (FieldValue{Value: "6.1.0-18-amd64 #1 SMP", Nodes: 2, Ranks: "0-1"}) ||
		k.Values[1] != (FieldValue{Value: "5.15.0-105-generic #1 SMP", Nodes: 1, Ranks: "2", Host: "h2"}) {
		t.Errorf("kernel: %+v", k)
	}
	if p := got["net.mlx5_0.port1"]; len(p.Values) != 2 || !strings.Contains(p.Values[1].Value, "200 Gb/sec") {
		t.Errorf("link rate: %+v", p)
	}

	var table bytes.Buffer
	if err := WriteResults(&table, FormatTable, col.Summary, col.Perf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"note: node record differs: kernel: ranks 0-1: 6.1.0-18-amd64 #1 SMP; rank 2 (h2): 5.15.0-105-generic #1 SMP\n",
		"note: node record differs: net.mlx5_0.port1: ranks 0-1: ACTIVE 400 Gb/sec (4X NDR) InfiniBand; rank 2 (h2): ACTIVE 200 Gb/sec (4X HDR) InfiniBand\n",
		"note: no node record (node.json) from 1 node: 3-h3\n",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	data, err := os.ReadFile(jobdir.Layout{Shared: shared}.Job("9", 0).Output(jobdir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		NodeRecords struct {
			Differs []struct {
				Field  string
				Values []struct{ Ranks string }
			}
		}
	}
	if err := json.Unmarshal(data, &s); err != nil || len(s.NodeRecords.Differs) != 2 || s.NodeRecords.Differs[0].Field != "kernel" {
		t.Errorf("summary.json's nodeRecords: %v %+v", err, s.NodeRecords)
	}
	report, _ := os.ReadFile(jobdir.Layout{Shared: shared}.Job("9", 0).Output(jobdir.ReportFile))
	if !bytes.Contains(report, []byte(`id="node-records"`)) || !bytes.Contains(report, []byte("5.15.0-105-generic")) {
		t.Error("report.html has no node-records section with the odd kernel")
	}
	// perf.csv: gpu_architecture came from nowhere else (the status files name none).
	if c := col.Perf.Col("gpu_architecture"); col.Perf.Rows[0][c] != "gfx942" {
		t.Errorf("gpu_architecture from the winner's record: %q", col.Perf.Rows[0][c])
	}
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

func timeAfter(seconds int) <-chan time.Time { return time.After(time.Duration(seconds) * time.Second) }

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
