package commands

import (
	"bytes"
	"testing"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
)

// colourColumn colours whole cells of its column only: a model named like a status, a
// status word in another column and rows under the table are left alone; the header's
// column is found by its name, with runes (not bytes) before it.
func TestColourColumn(t *testing.T) {
	table := "MODEL    STATUS   NOTE\n" +
		"SUCCESS  FAILURE  SUCCESS\n" +
		"héllo…   SUCCESS  -\n" +
		"x        FAILURE2 -\n" +
		"short\n" +
		"\n" +
		"SUCCESS  SUCCESS  after the table\n"
	want := "MODEL    STATUS   NOTE\n" +
		"SUCCESS  \x1b[31mFAILURE\x1b[0m  SUCCESS\n" +
		"héllo…   \x1b[32mSUCCESS\x1b[0m  -\n" +
		"x        FAILURE2 -\n" +
		"short\n" +
		"\n" +
		"SUCCESS  SUCCESS  after the table\n"
	if got := colourColumn(table, "STATUS", statusColours); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := colourColumn(table, "VERDICT", statusColours); got != table {
		t.Errorf("no such column: changed:\n%q", got)
	}
}

// submit --wait's node outcomes: success green, failure, timeout and lost red, on a
// terminal only.
func TestOutcomeColour(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	nodes := []jobdir.NodeProgress{{Node: "0-n1", Outcome: "success", Phase: "done"}, {Node: "1-n2", Outcome: "timeout", Phase: "run"}, {Node: "2-n3", Outcome: "running", Phase: "run"}}
	plain := "NODE  OUTCOME  LAST PHASE\n0-n1  success  done\n1-n2  timeout  run\n2-n3  running  run\n"
	coloured := "NODE  OUTCOME  LAST PHASE\n0-n1  \x1b[32msuccess\x1b[0m  done\n1-n2  \x1b[31mtimeout\x1b[0m  run\n2-n3  running  run\n"
	for _, tty := range []bool{true, false} {
		var out bytes.Buffer
		s := iostreams.New(nil, &out, &bytes.Buffer{})
		s.SetStdoutTTY(tty)
		printOutcomes(s, nodes)
		want := plain
		if tty {
			want = coloured
		}
		if out.String() != want {
			t.Errorf("tty %v:\n%q\nwant\n%q", tty, out.String(), want)
		}
	}
}
