package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/fanout"
)

// A stream that failed at another rank is reported naming that rank first: the first rank to
// report it may not be where it began (rank 2 sees its predecessor die before the job channel
// counts rank 1 lost).
func TestFailReasonNamesWhereTheStreamFailed(t *testing.T) {
	r := &nodeRun{node: Node{JobID: "77", Rank: 2, World: 3, Hosts: []string{"ha", "hb", "hc"}, Host: "hc", Source: "slurm"}}
	cut := fmt.Errorf("receiving image x: %w", &fanout.Error{Rank: 1, Seen: 2, Reason: "connection to rank 2 lost after 12 bytes: EOF"})
	if got := r.failReason(cut); !strings.HasPrefix(got, "saw the image stream fail at rank 1 (hb): receiving image x: image fan-out: rank 1:") {
		t.Errorf("%q", got)
	}
	own := &fanout.Error{Rank: 2, Seen: 2, Reason: "loading the image: refused"}
	if got := r.failReason(own); got != "failed: image fan-out: rank 2: loading the image: refused" {
		t.Errorf("%q", got)
	}
	// a rank out of the job's range (a malformed report) is not looked up
	if got := r.failReason(&fanout.Error{Rank: 2000000000, Seen: 2, Reason: "x"}); !strings.HasPrefix(got, "failed: ") {
		t.Errorf("%q", got)
	}
	if got := r.failReason(errors.New("disk full")); got != "failed: disk full" {
		t.Errorf("%q", got)
	}
}
