package models

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// ArchBuildArg is the build arg madengine's build --target-archs sets to each
// architecture it builds for (orchestration/build_orchestrator.py, _build_model_for_arch):
// one image per architecture.
const ArchBuildArg = "MAD_SYSTEM_GPU_ARCHITECTURE"

// gfxRE is an AMD GPU architecture as the ROCm tools name it: gfx908, gfx90a, gfx942,
// gfx1100.
var gfxRE = regexp.MustCompile(`^gfx([0-9]{3,4}|[0-9]{2}[0-9a-f])$`)

// ParseTargetArchs checks --target-archs (each a comma list): every entry an AMD GPU
// architecture (gfx90a, gfx942), none twice. The error says which entry and why.
func ParseTargetArchs(flags []string) ([]string, error) {
	var out []string
	for _, f := range flags {
		for _, a := range strings.Split(f, ",") {
			a = strings.TrimSpace(a)
			switch {
			case a == "":
				return nil, inputError("--target-archs", "an empty architecture in %s: give a comma list such as gfx90a,gfx942", document.Quote(f))
			case !gfxRE.MatchString(a):
				hint := ""
				if l := strings.ToLower(a); l != a && gfxRE.MatchString(l) {
					hint = fmt.Sprintf(" (write it in lower case: %s)", l)
				}
				return nil, inputError("--target-archs", "%s is not a GPU architecture%s: give the gfx names the ROCm tools print (rocminfo, benchctl gpus), e.g. gfx90a (MI200), gfx942 (MI300X), gfx950, gfx1100", document.Quote(a), hint)
			case slices.Contains(out, a):
				return nil, inputError("--target-archs", "%s is given twice", a)
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// WithTargetArch is m with ArchBuildArg set to arch in every image it builds (the
// manifest's and each benchmark's own), as madengine builds for one architecture. A
// manifest or context that sets ArchBuildArg itself is an error: two answers to one
// question (madengine lets the context win silently).
func WithTargetArch(m *manifest.Manifest, arch string) (*manifest.Manifest, error) {
	c := *m
	set := func(img *manifest.Image) error {
		if img == nil || !img.Builds() {
			return nil
		}
		for _, a := range img.BuildArgs {
			if a.Name == ArchBuildArg {
				return inputError("--target-archs", "the build args set %s=%s already (image.buildArgs, or docker_build_arg of --context): give the architectures one way", ArchBuildArg, a.Value)
			}
		}
		img.BuildArgs = append(slices.Clone(img.BuildArgs), manifest.EnvVar{Name: ArchBuildArg, Value: arch})
		sort.Slice(img.BuildArgs, func(i, j int) bool { return img.BuildArgs[i].Name < img.BuildArgs[j].Name })
		return nil
	}
	if err := set(&c.Image); err != nil {
		return nil, err
	}
	c.Benchmarks = slices.Clone(m.Benchmarks)
	for i := range c.Benchmarks {
		if b := c.Benchmarks[i].Image; b != nil {
			img := *b
			if err := set(&img); err != nil {
				return nil, err
			}
			c.Benchmarks[i].Image = &img
		}
	}
	return &c, nil
}
