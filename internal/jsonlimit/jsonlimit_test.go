package jsonlimit

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	l := Limits{Marks: 10, Containers: 5, Depth: 3}
	for _, tc := range []struct {
		doc  string
		want string // "" for no error
	}{
		{`{"a":1,"b":[1,2,3]}`, ""},
		{`{"a":"{{{{{{{{{{,,,,,,,,,,::::::"}`, ""}, // marks inside strings do not count
		{`{"a":"\"{[,:{[,:{[,:"}`, ""},             // nor after an escaped quote
		{`[[[1]]]`, ""},
		{`[[[[1]]]]`, "nesting deeper than 3 levels"},
		{`[{},{},{},{},{},{}]`, "more than 5 objects and lists"},
		{`[1,2,3,4,5,6,7,8,9,10,11]`, "more than 10 values"},
		{``, ""},
	} {
		err := Check([]byte(tc.doc), l)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.doc, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// 16 MiB of `{},` is refused in one pass, without allocating.
func TestCheckHostile(t *testing.T) {
	doc := append([]byte(`{"benchmarks":[`), bytes.Repeat([]byte(`{},`), 16<<20/3)...)
	var e *Error
	if err := Check(doc, Limits{Marks: 2_500_000, Containers: 200_000, Depth: 64}); !errors.As(err, &e) || e.Offset > 2000000 {
		t.Fatalf("got %v", err)
	}
	if n := testing.AllocsPerRun(3, func() { Check(doc, Limits{Marks: 2_500_000, Containers: 200_000, Depth: 64}) }); n > 100 { // the error only, not one per value (millions)
		t.Errorf("%v allocations per check", n)
	}
}
