package jobsecret

import (
	"testing"

	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/scheduler"
)

// Node is the node context the secret is for.
type Node = scheduler.Node

func testJobFolder(t *testing.T) *jobdir.Folder {
	t.Helper()
	job, err := jobdir.Layout{Shared: t.TempDir()}.CreateJob("1", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { job.Close() })
	return job
}
