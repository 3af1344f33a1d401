package models

import (
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func TestParseTargetArchs(t *testing.T) {
	got, err := ParseTargetArchs([]string{"gfx90a, gfx942", "gfx1100,gfx950"})
	if err != nil || !slices.Equal(got, []string{"gfx90a", "gfx942", "gfx1100", "gfx950"}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "gfx", "gfx9", "gfx94", "gfx90A", "MI300X", "sm_90", "gfx12000x", strings.Repeat("gfx9", 2000)} {
		if _, err := ParseTargetArchs([]string{"gfx942," + bad}); err == nil {
			t.Errorf("%.40q accepted", bad)
		}
	}
}

// Each image the manifest builds gets the architecture as madengine's build arg; an image
// used as it is (image.ref) gets none; a build arg set already is refused.
func TestWithTargetArch(t *testing.T) {
	own := &manifest.Image{Dockerfile: "/c/own.Dockerfile", BuildArgs: []manifest.EnvVar{{Name: "Z", Value: "1"}}}
	m := &manifest.Manifest{Image: manifest.Image{Dockerfile: "/c/Dockerfile"},
		Benchmarks: []manifest.Benchmark{{Name: "a", Image: own}, {Name: "b", Image: &manifest.Image{Ref: "busybox"}}, {Name: "c"}}}
	got, err := WithTargetArch(m, "gfx942")
	if err != nil {
		t.Fatal(err)
	}
	want := manifest.EnvVar{Name: ArchBuildArg, Value: "gfx942"}
	if !slices.Equal(got.Image.BuildArgs, []manifest.EnvVar{want}) ||
		!slices.Equal(got.Benchmarks[0].Image.BuildArgs, []manifest.EnvVar{want, {Name: "Z", Value: "1"}}) || got.Benchmarks[1].Image.BuildArgs != nil {
		t.Fatalf("%+v %+v", got.Image, got.Benchmarks)
	}
	if len(m.Image.BuildArgs) != 0 || len(own.BuildArgs) != 1 {
		t.Fatal("the manifest given was changed")
	}
	m.Image.BuildArgs = []manifest.EnvVar{{Name: ArchBuildArg, Value: "gfx90a"}}
	if _, err := WithTargetArch(m, "gfx942"); err == nil || !strings.Contains(err.Error(), "MAD_SYSTEM_GPU_ARCHITECTURE=gfx90a already") {
		t.Fatalf("%v", err)
	}
}
