package manifest

import "testing"

func TestSecretValues(t *testing.T) {
	got := SecretValues([]EnvVar{{Name: "A", Value: "x"}, {Name: "MY_SECRET", Value: "tok", Secret: true}, {Name: "E", Secret: true},
		{Name: "HF_TOKEN", Value: "passed-through"}})
	if len(got) != 2 || got[0] != "tok" || got[1] != "passed-through" {
		t.Fatalf("%q", got)
	}
}
