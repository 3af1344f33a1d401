package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/results/internal/resultstest"
)

// Defect: the failed-node excerpt and reasons in report.html quoted a benchmark's secrets
// as the node wrote them. collect does not know the job's secret values; it hides what is
// named like a credential (the node redacts the values it knows before it writes).
func TestReportRedactsCredentialsInExcerptsAndReasons(t *testing.T) {
	shared := resultstest.SharedCopy(t)
	node := jobdir.Layout{Shared: shared}.Job("300", 0).Node(1, "f2")
	sum := filepath.Join(node.Diagnostics("train"), jobdir.DiagSummaryFile)
	old, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(sum, append([]byte("  | HF_TOKEN=hf_abcdefgh123 python train.py --password hunter22 --epochs 3\n"), old...), 0o600)
	st := node.Status()
	data, _ := os.ReadFile(st)
	data = []byte(strings.ReplaceAll(string(data), "ran past its 10m0s timeout", "ran past its 10m0s timeout: curl -H 'Authorization: Bearer sk-live-abcdefgh1234'"))
	os.WriteFile(st, data, 0o644)
	col, err := collectJob(t, shared, "300", -1, false)
	if err != nil {
		t.Fatal(err)
	}
	html := render(t, col.Summary)
	for _, leak := range []string{"hf_abcdefgh123", "hunter22", "sk-live-abcdefgh1234"} {
		if strings.Contains(html, leak) {
			t.Errorf("report.html quotes %q", leak)
		}
	}
	for _, want := range []string{"HF_TOKEN=*** python train.py --password *** --epochs 3", "Bearer ***"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
