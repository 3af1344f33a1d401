package timeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Off (no BENCHCTL_TIMELINE): nothing is kept or written. On: marks in order, bounded,
// and each command's marks one JSON line, appended.
func TestMarksAndWrite(t *testing.T) {
	file = ""
	Mark("ignored")
	if len(marks) != 0 || Write() != nil {
		t.Fatal("marks kept while off")
	}
	file = filepath.Join(t.TempDir(), "t.jsonl")
	defer func() { file, marks = "", nil }()
	for range MaxMarks + 5 {
		Mark("loop")
	}
	if len(marks) != MaxMarks {
		t.Fatalf("%d marks kept", len(marks))
	}
	marks = marks[:1]
	if err := Write(); err != nil {
		t.Fatal(err)
	}
	marks = nil
	Mark("second")
	if err := Write(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", b)
	}
	var ps []Point
	if err := json.Unmarshal([]byte(lines[0]), &ps); err != nil || len(ps) != 2 || ps[0].Name != "loop" || ps[1].Name != "exit" || ps[1].MS < ps[0].MS {
		t.Fatalf("%v %+v", err, ps)
	}
}
