package jsonout

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// A list printed as JSON is [] when empty, at the top and inside objects; what is not a
// list, or says itself how it marshals, is left alone.
func TestWriteJSONEmptyLists(t *testing.T) {
	type inner struct {
		Tags []string `json:"tags"`
	}
	type outer struct {
		Items   []inner          `json:"items"`
		Ptr     *inner           `json:"ptr"`
		NilPtr  *inner           `json:"nilPtr"`
		Arr     [1]inner         `json:"arr"`
		Bytes   []byte           `json:"bytes"`
		Raw     json.RawMessage  `json:"raw"`
		Map     map[string][]int `json:"map"`
		Omitted []int            `json:"omitted,omitempty"`
		When    time.Time        `json:"when"`
		hidden  []int
	}
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"nil list", []string(nil), `[]`},
		{"nil list of structs", []inner(nil), `[]`},
		{"pointer to a nil list", new([]int), `[]`},
		{"list", []inner{{}, {Tags: []string{"a"}}}, `[{"tags":[]},{"tags":["a"]}]`},
		{"nil interface", nil, `null`},
		{"object", outer{Items: []inner{{}}, Ptr: &inner{}, Map: map[string][]int{"k": nil}, hidden: nil},
			`{"items":[{"tags":[]}],"ptr":{"tags":[]},"nilPtr":null,"arr":[{"tags":[]}],"bytes":null,"raw":null,"map":{"k":null},"when":"0001-01-01T00:00:00Z"}`},
	} {
		var b bytes.Buffer
		if err := Write(&b, c.v); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var compact bytes.Buffer
		json.Compact(&compact, b.Bytes())
		if compact.String() != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, compact.String(), c.want)
		}
	}
	// Indented, one value, a newline at the end, as the commands printed before.
	var b bytes.Buffer
	Write(&b, []inner{{Tags: []string{"a"}}})
	if want := "[\n  {\n    \"tags\": [\n      \"a\"\n    ]\n  }\n]\n"; b.String() != want {
		t.Errorf("layout %q, want %q", b.String(), want)
	}
}
