package slurm

import (
	"strings"
	"testing"
)

// A checkout job submitted with --run-get-models-json runs its nodes with it: each node
// lists the checkout's models as the login node did.
func TestScriptPassesRunGetModelsJSON(t *testing.T) {
	j := sampleJob()
	j.Manifest, j.Tags, j.Checkout = "", []string{"dummy"}, "/home/me/MAD"
	for _, on := range []bool{false, true} {
		j.RunGenerators = on
		s, err := j.Script()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s, "run --tags dummy --run-get-models-json") != on {
			t.Errorf("RunGenerators %v:\n%s", on, s)
		}
	}
}
