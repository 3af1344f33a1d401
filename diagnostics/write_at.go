package diagnostics

import (
	"encoding/json"
	"os"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/jobdir"
)

// WriteAt stores the report as report.json and summary.txt (what Write stores, 0600: a
// process table can hold what a benchmark put on its command line) in the open folder dir,
// through its descriptor: the node folder is in the shared job folder, and a folder swapped
// for a link after it was opened cannot redirect the write.
func (r Report) WriteAt(dir *os.File) error {
	data, _ := json.MarshalIndent(r, "", "  ")
	if err := atomicfile.WriteFileAt(dir, jobdir.DiagReportFile, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFileAt(dir, jobdir.DiagSummaryFile, []byte(r.Summary()), 0o600)
}
