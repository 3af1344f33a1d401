package nodestatus

import (
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

// testNodeFolder is the folder of node rank on host of job in shared, created and open.
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
