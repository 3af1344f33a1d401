package runner

import (
	"errors"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// Diagnostics and the log-scan reason hide the container's secrets: those listed under
// secrets, credential-like variables passed through from the host (not marked secret),
// and credential-like NAME=value text whatever its value.
func TestRedactorOfHidesTheContainersSecrets(t *testing.T) {
	spec := Spec{Env: []manifest.EnvVar{
		{Name: "WANDB_API_KEY", Value: "wandb-secret-1", Secret: true},
		{Name: "HF_TOKEN", Value: "hf_passed_through"}, // passEnv: HF_*
		{Name: "NCCL_DEBUG", Value: "INFO"},
	}}
	in := "wandb-secret-1 hf_passed_through NCCL_DEBUG=INFO OTHER_PASSWORD=xyz"
	want := "*** *** NCCL_DEBUG=INFO OTHER_PASSWORD=***"
	if got := redactorOf(spec).Redact(in); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// A benchmark's error in status.json (0644 in the shared folder) and in the node's log
// hides the secrets an engine's error may quote.
func TestStatusErrorHidesSecrets(t *testing.T) {
	spec := Spec{Env: []manifest.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2-long", Secret: true}}}
	err := errors.New(`starting container: exec: "/run --pw hunter2-long": stat /run: no such file`)
	if got, want := statusError(spec, err), `starting container: exec: "/run --pw ***": stat /run: no such file`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if statusError(spec, nil) != "" {
		t.Error("no error must be empty")
	}
}
