package shellwords

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	for in, want := range map[string][]string{
		"":                           nil,
		"  a  b\tc\n":                {"a", "b", "c"},
		`'a b' "c d" e\ f`:           {"a b", "c d", "e f"},
		`"x\"y\\z\$w" '$HOME'`:       {`x"y\z$w`, "$HOME"},
		`--opt='' "" x`:              {"--opt=", "", "x"},
		`a'b'"c"`:                    {"abc"},
		"--shm-size=16g --ipc host ": {"--shm-size=16g", "--ipc", "host"},
		`trailing\`:                  {"trailing"}, // a backslash with nothing to escape is dropped
	} {
		got, err := Split(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`'open`, `"open`, `a "b\"`} {
		if _, err := Split(bad); err == nil {
			t.Errorf("Split(%q): no error", bad)
		}
	}
}
