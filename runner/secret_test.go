package runner

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func TestEnvSecret(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    string
		set     bool
		wantErr string
	}{
		{map[string]string{}, "", false, ""},
		{map[string]string{"BENCHCTL_JOB_SECRET": " 0123456789abcdef \n"}, "0123456789abcdef", true, ""},
		{map[string]string{"BENCHCTL_JOB_SECRET": "   "}, "", false, "is set but blank"},
		{map[string]string{"BENCHCTL_JOB_SECRET": "               x"}, "", false, "shorter than 16 characters"},
		{map[string]string{"BENCHCTL_JOB_SECRET": "short"}, "", false, "shorter than 16 characters"},
	} {
		v, set, err := envSecret(lookupOf(c.env))
		if v != c.want || set != c.set || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%q: got %q %v %v", c.env["BENCHCTL_JOB_SECRET"], v, set, err)
		}
	}
	// The run uses it as the key; a blank one is not silently replaced by a derived key.
	if _, err := jobSecret(context.Background(), lookupOf(map[string]string{"BENCHCTL_JOB_SECRET": " "}), "", Node{}, func(string) {}); err == nil {
		t.Error("a blank secret fell back to a derived one")
	}
}

// Every secret of the manifest must be set for a run; an empty value is set.
func TestCheckSecrets(t *testing.T) {
	m := &manifest.Manifest{Path: "/m.yaml", Secrets: []string{"HF_TOKEN", "WANDB_API_KEY"}}
	if err := CheckSecrets(m, lookupOf(map[string]string{"HF_TOKEN": "x", "WANDB_API_KEY": ""})); err != nil {
		t.Fatal(err)
	}
	err := CheckSecrets(m, lookupOf(map[string]string{"HF_TOKEN": "x"}))
	var se *SecretUnsetError
	if !errors.As(err, &se) || !se.InvalidInput() || se.Name != "WANDB_API_KEY" ||
		!strings.Contains(err.Error(), "/m.yaml: secrets: WANDB_API_KEY is not set") || !strings.Contains(err.Error(), "export WANDB_API_KEY") {
		t.Fatalf("%v", err)
	}
}
