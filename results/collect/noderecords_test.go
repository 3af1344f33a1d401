package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/jobdir/jobdirtest"
	"github.com/benchctl/benchctl/results"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

func TestCollectReportsWhatDiffersBetweenNodeRecords(t *testing.T) {
	shared := t.TempDir()
	job := resultstest.WriteJob(t, shared, "9", 4)
	csv := "model,performance,metric,status\nm,10,x,SUCCESS\n"
	for r := range 4 {
		resultstest.WriteNode(t, job, r, jobdir.OutcomeSuccess, csv)
	}
	jobdirtest.NodeRecord(t, resultstest.NodeOf(job, 0), record(0, "6.1.0-18-amd64"))
	jobdirtest.NodeRecord(t, resultstest.NodeOf(job, 1), record(1, "6.1.0-18-amd64"))
	slow := record(2, "5.15.0-105-generic")
	slow.Machine.Network[0].Ports[0].Rate = "200 Gb/sec (4X HDR)"
	jobdirtest.NodeRecord(t, resultstest.NodeOf(job, 2), slow)
	// rank 3 wrote none.

	col, err := Collect(context.Background(), CollectOptions{SharedDir: shared, JobID: "9", Attempt: -1})
	if err != nil {
		t.Fatal(err)
	}
	nr := col.Summary.NodeRecords
	if nr.Nodes != 3 || nr.WithoutCount != 1 || nr.Without[0].Rank != 3 || nr.Without[0].Why != "no node.json" {
		t.Errorf("nodes with and without a record: %+v", nr)
	}
	got := map[string]results.FieldDiff{}
	for _, d := range nr.Differs {
		got[d.Field] = d
	}
	if len(got) != 2 {
		t.Errorf("differs: want kernel and net.mlx5_0.port1 only (hostnames, GUIDs and PCI addresses are not compared), got %+v", nr.Differs)
	}
	k := got["kernel"]
	if len(k.Values) != 2 || k.Values[0] != (results.FieldValue{Value: "6.1.0-18-amd64 #1 SMP", Nodes: 2, Ranks: "0-1"}) ||
		k.Values[1] != (results.FieldValue{Value: "5.15.0-105-generic #1 SMP", Nodes: 1, Ranks: "2", Host: "h2"}) {
		t.Errorf("kernel: %+v", k)
	}
	if p := got["net.mlx5_0.port1"]; len(p.Values) != 2 || !strings.Contains(p.Values[1].Value, "200 Gb/sec") {
		t.Errorf("link rate: %+v", p)
	}

	var table bytes.Buffer
	if err := WriteResults(&table, results.FormatTable, col.Summary, col.Perf); err != nil {
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
