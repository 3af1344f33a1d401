package manifest

import (
	"strings"
	"testing"
)

func TestCloneNames(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/ROCm/MAD.git":  "MAD",
		"https://host/org/repo/":           "repo",
		"git@github.com:org/pytorch.git":   "pytorch",
		"file:///srv/git/bench":            "bench",
		"https://host/..":                  "repo",
		"https://user:tok@host/org/x.git":  "x",
		"  https://host/org/spaced.git   ": "spaced",
	} {
		if got := CloneName(url); got != want {
			t.Errorf("CloneName(%q) = %q, want %q", url, got, want)
		}
	}
	if CloneKey("https://a/x.git") == CloneKey("https://b/x.git") || !strings.HasPrefix(CloneKey("https://a/x.git"), "x-") {
		t.Error("two urls of one repository name share a clone")
	}
}
