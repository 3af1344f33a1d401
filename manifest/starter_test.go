package manifest

import "testing"

func TestSuggestNameIsAnImageName(t *testing.T) {
	for in, want := range map[string]string{
		"a..b": "a.b", "t-": "t", "t.": "t", "t___x": "t-x", "t__x": "t__x", "a._b": "a.b", "a_-b": "a-b", "a-_b": "a-b",
		"Llama 3.1 8B": "llama-3.1-8b", "My_Model": "my_model", "---": "benchmark", "a--b": "a--b",
	} {
		got := SuggestName(in)
		if got != want || !imageNameRE().MatchString(got) {
			t.Errorf("SuggestName(%q) = %q, want %q (an image name)", in, got, want)
		}
	}
}
