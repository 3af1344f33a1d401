package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// Whatever validate accepts, every reader of job.json reads: the largest experiment the
// bounds allow (1,000 variants of 64 parameters, their values as long as the job.json
// bound lets them be) is written into job.json and read back. A 6.6 KB manifest of 1,000
// variants × 201 parameters wrote an 18.5 MB job.json that ReadJob refused; it is refused
// at validate now (manifest's TestIncludeNamesAndDuplicates).
func TestTheLargestExperimentsJobJSONIsRead(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: big\nimage: {ref: busybox}\nbenchmarks: [{name: b, command: [\"true\"]}]\nexperiment:\n  matrix:\n    a: [")
	for i := range manifest.MaxVariants {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString("]\n    include: [{")
	for j := range manifest.MaxVariantParams - 1 {
		if j > 0 {
			b.WriteString(", ")
		}
		b.WriteString("p" + strconv.Itoa(j) + ": " + strings.Repeat("v", 8))
	}
	b.WriteString("}]\n")
	m, _, err := manifest.Parse("m.yaml", "/x/m.yaml", []byte(b.String()), manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Experiment.Variants) != manifest.MaxVariants || len(m.Experiment.Variants[0].Params) != manifest.MaxVariantParams {
		t.Fatalf("%d variants of %d parameters", len(m.Experiment.Variants), len(m.Experiment.Variants[0].Params))
	}
	j := &jobdir.Job{Job: "1", World: 1, Nodes: []string{"n1"}}
	if err := j.SetManifest(m.Redacted()); err != nil {
		t.Fatal(err)
	}
	f, err := jobdir.Layout{Shared: t.TempDir()}.CreateJob("1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.WriteJob(j); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.Path, jobdir.JobFile)
	st, _ := os.Stat(path)
	back, err := jobdir.ReadJob(path)
	if err != nil {
		t.Fatalf("job.json of %d bytes: %v", st.Size(), err)
	}
	if back.Manifest.Experiment == nil || len(back.Manifest.Experiment.Variants) != manifest.MaxVariants {
		t.Errorf("read back: %+v", back.Manifest.Experiment)
	}
	t.Logf("job.json: %d bytes", st.Size())
}
