package slurm

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"n1", []string{"n1"}},
		{"n[1-3]", []string{"n1", "n2", "n3"}},
		{"gpu-[01-04,07],login1", []string{"gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-07", "login1"}},
		{"n[1-3]-ib", []string{"n1-ib", "n2-ib", "n3-ib"}},
		{"node[008-011]", []string{"node008", "node009", "node010", "node011"}},
		{"a,b[2,4],c", []string{"a", "b2", "b4", "c"}},
		{"r[1-2]n[1-2]", []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{"x[9-10]", []string{"x9", "x10"}},
		{" n[1-2] ", []string{"n1", "n2"}},
	}
	for _, c := range cases {
		got, err := ExpandHostlist(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	manyRanges := "n[" + strings.TrimSuffix(strings.Repeat("0-1048574,", 48), ",") + "]"
	for _, bad := range []string{"", "n[1-3", "n1]", "n[]", "n[3-1]", "n[a-b]", "n[1-2,]", "a,,b", "n[1-99999999]",
		"a]b[1-2]", "n1, n2", "n 1,n2", "n1,n1", "n[1-2],n2", "n[[1-2]]", "a\nb", manyRanges, "r[1-2000]n[1-2000]"} {
		if got, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q) = %v, want an error", bad, got)
		} else if !strings.Contains(err.Error(), "hostlist") {
			t.Errorf("error %q does not say hostlist", err)
		}
	}
}
