package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/runner/podman"
)

// A ulimit a rootless engine cannot give is refused before the image phase (no image is
// looked at, let alone loaded), naming the benchmark and the limit, not at container create.
func TestRunRefusesEngineLimitBeforeImages(t *testing.T) {
	eng := &runEngine{version: podmanVersion, libpod: libpodAnswering(t, true)}
	r := runLocalOf(t, eng, "container: {ulimits: {nofile: 1099511627776}}\nbenchmarks:\n- {name: b, command: [/b]}\n", nil)
	var le *podman.EngineLimitError
	if !errors.As(r.err, &le) || exitcode.Of(r.err) != exitcode.Invalid {
		t.Fatalf("Run: %v, want an *EngineLimitError (exit 4)", r.err)
	}
	if !strings.Contains(r.err.Error(), "benchmark b: container.ulimits.nofile asks for 1099511627776:1099511627776") {
		t.Errorf("err = %v, want it to name the benchmark and the limit", r.err)
	}
	if c := eng.called(); strings.Contains(c, "inspect-image") || strings.Contains(c, "create") {
		t.Errorf("the image phase or a container ran before the refusal: %s", c)
	}
}
