package diagnostics

import (
	"context"
	"github.com/benchctl/benchctl/workload/engine"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// topEngine is a running container whose benchmark put secrets on its command line.
type topEngine struct{ Engine }

func (topEngine) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	return client.ServerVersionResult{Version: "28", APIVersion: "1.51"}, nil
}

func (topEngine) ContainerInspect(context.Context, string, client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{Container: container.InspectResponse{State: &container.State{Running: true, Pid: -1}}}, nil
}

func (topEngine) ContainerTop(context.Context, string, client.ContainerTopOptions) (client.ContainerTopResult, error) {
	return client.ContainerTopResult{Titles: []string{"PID", "CMD"}, Processes: [][]string{
		{"1", "python train.py --hf-token hf_live_9f8e7d6c --epochs 3"},
		{"7", "sh -c curl -H 'Authorization: Bearer sk-abcdefgh12345678' https://x"},
		{"9", "worker --password=opaque123"},
	}}, nil
}

// Defect: a benchmark's secrets on its command line and in its log were written into
// report.json and summary.txt as they were, readable by everyone.
func TestDiagnosticsAreRedactedAndPrivate(t *testing.T) {
	const known = "hf_live_9f8e7d6c"
	logTail := []string{
		"using token " + known + " for the hub",
		"DB_PASSWORD=opaque123 connecting",
		strings.Repeat("x", MaxLineBytes-4) + known, // a value across the cut is hidden whole
	}
	red := manifest.NewTextRedactor(manifest.SecretValues([]manifest.EnvVar{{Name: "HF_TOKEN", Value: known, Secret: true}})...)
	noGPU := func(context.Context, gpu.Options) (gpu.Inventory, error) { return gpu.Inventory{}, nil }
	r := capture(context.Background(), engine.New(topEngine{}), "c1", "exit code 1 after --token "+known, logTail, nil, red, noGPU)
	dir := filepath.Join(t.TempDir(), jobdir.DiagRel("b"))
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{jobdir.DiagReportFile, jobdir.DiagSummaryFile} {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{known, "hf_live", "sk-abcdefgh", "opaque123"} {
			if strings.Contains(string(data), leak) {
				t.Errorf("%s holds %q:\n%s", name, leak, data)
			}
		}
		if !strings.Contains(string(data), "train.py --hf-token *** --epochs 3") {
			t.Errorf("%s lost the command line around the secret:\n%s", name, data)
		}
		st, _ := os.Stat(p)
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %04o: group and others may read a process table", name, st.Mode().Perm())
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm()&0o077 != 0 {
		t.Errorf("the diagnostics folder has mode %04o", st.Mode().Perm())
	}
}
