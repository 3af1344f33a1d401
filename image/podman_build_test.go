package image

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// podmanFailingBuild is what Podman 4.3.1's compatible build streamed for a RUN that printed 40
// lines on stdout and its reason on stderr (recorded on the testbed): buildah's step lines
// ("STEP n/m: "), stderr not marked, and the two streams forwarded in no fixed order (the
// reason came second, before a batch of 39 stdout lines).
func podmanFailingBuild() string {
	var b strings.Builder
	b.WriteString(`{"stream":"STEP 1/3: FROM scratch\n"}` + "\n")
	b.WriteString(`{"stream":"STEP 2/3: COPY . /\n"}` + "\n")
	b.WriteString(`{"stream":"--\u003e 4f1c2b7a9d3e\n"}` + "\n")
	b.WriteString(`{"stream":"STEP 3/3: RUN [\"/hello\", \"fail\"]\n"}` + "\n")
	b.WriteString(`{"stream":"hello output line 0\n"}` + "\n")
	b.WriteString(`{"stream":"hello is failing on purpose\n"}` + "\n")
	var rest strings.Builder
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&rest, `hello output line %d\n`, i)
	}
	b.WriteString(`{"stream":"` + rest.String() + `"}` + "\n")
	b.WriteString(`{"errorDetail":{"message":"building at STEP \"RUN [\"/hello\", \"fail\"]\": while running runtime: exit status 7\n"},"error":"building at STEP \"RUN [\"/hello\", \"fail\"]\": while running runtime: exit status 7\n"}` + "\n")
	return b.String()
}

// A failing step of Podman's build is a BuildError naming the step, whose tail keeps the
// reason wherever Podman put it among the step's lines (the first lines of the step are
// kept with its last ones), and no earlier step's output.
func TestPodmanBuildFailureKeepsStepAndReason(t *testing.T) {
	_, err := (&DockerBuilder{}).follow(strings.NewReader(podmanFailingBuild()), nil)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want a BuildError", err)
	}
	if be.Step != `STEP 3/3: RUN ["/hello", "fail"]` {
		t.Errorf("step %q, want the RUN step", be.Step)
	}
	tail := strings.Join(be.Tail, "\n")
	for _, s := range []string{"hello is failing on purpose", "hello output line 39", "hello output line 0"} {
		if !strings.Contains(tail, s) {
			t.Errorf("the tail lacks %q:\n%s", s, tail)
		}
	}
	if strings.Contains(tail, "STEP 2/3") || strings.Contains(tail, "4f1c2b7a9d3e") || len(be.Tail) > 45 {
		t.Errorf("the tail (%d lines) has more than the failing step's head and tail:\n%s", len(be.Tail), tail)
	}
}
