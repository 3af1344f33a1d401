package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

// Every secret of the manifest must be set for a run; an empty value is set.
func TestCheckSecrets(t *testing.T) {
	m := &manifest.Manifest{Path: "/m.yaml", Secrets: []string{"HF_TOKEN", "WANDB_API_KEY"}}
	if err := CheckSecrets(m, testutil.LookupOf(map[string]string{"HF_TOKEN": "x", "WANDB_API_KEY": ""})); err != nil {
		t.Fatal(err)
	}
	err := CheckSecrets(m, testutil.LookupOf(map[string]string{"HF_TOKEN": "x"}))
	var se *SecretUnsetError
	if !errors.As(err, &se) || !se.InvalidInput() || se.Name != "WANDB_API_KEY" ||
		!strings.Contains(err.Error(), "/m.yaml: secrets: WANDB_API_KEY is not set") || !strings.Contains(err.Error(), "export WANDB_API_KEY") {
		t.Fatalf("%v", err)
	}
}
