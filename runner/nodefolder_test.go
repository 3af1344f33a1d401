package runner

import (
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// testNodeFolder creates and opens jobs/<job>/nodes/<rank>-<host> under shared.
func testNodeFolder(t testing.TB, shared, job string, rank int, host string) *jobdir.NodeFolder {
	t.Helper()
	jf, err := jobdir.Layout{Shared: shared}.CreateJob(job, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	nf, err := jf.CreateNode(rank, host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nf.Close() })
	return nf
}

// testFiles is a benchmark's log and diagnostics in a fresh node folder.
func testFiles(t *testing.T, bench string) nodeFiles {
	return nodeFiles{node: testNodeFolder(t, t.TempDir(), "1", 0, "n1"), bench: bench}
}
