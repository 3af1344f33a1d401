package results

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestIndentJSON(t *testing.T) {
	long := strings.Repeat("x", smallJSON)
	in := map[string]any{
		"small":  map[string]any{"a": 1, "b": []int{1, 2}},
		"empty":  []int{},
		"big":    []any{map[string]any{"s": long}, map[string]any{"q": `a "quoted", {tricky} [string]\`}},
		"number": -1.5e-7,
		"null":   nil,
	}
	compact, _ := json.Marshal(in)
	got := indentJSON(compact)
	var back, want any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, got)
	}
	json.Unmarshal(compact, &want)
	if !jsonEqual(back, want) {
		t.Fatalf("content changed:\n%s", got)
	}
	for _, line := range []string{`  "small": {"a":1,"b":[1,2]}`, `  "empty": [],`, `  "big": [`, `      "s": "` + long + `"`,
		`    {"q":"a \"quoted\", {tricky} [string]\\"}`, `  "number": -1.5e-7,`} {
		if !strings.Contains(string(got), line+"\n") {
			t.Errorf("no line %q in\n%s", line, got)
		}
	}
	if !json.Valid(got) || got[len(got)-1] != '\n' {
		t.Fatal("invalid output")
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
