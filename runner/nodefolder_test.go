package runner

import (
	"testing"

	"github.com/benchctl/benchctl/jobdir/jobdirtest"
)

// testNodeFolder is jobdirtest.NodeFolder.
var testNodeFolder = jobdirtest.NodeFolder

// testFiles is a benchmark's log and diagnostics in a fresh node folder.
func testFiles(t *testing.T, bench string) nodeFiles {
	return nodeFiles{node: testNodeFolder(t, t.TempDir(), "1", 0, "n1"), bench: bench}
}
