package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest/document"
)

// writeManifest writes a manifest beside nothing else, pointing at the fixture checkout.
func writeManifest(t *testing.T, body string) string {
	t.Helper()
	mad, err := filepath.Abs("../tests/fixtures/mad")
	if err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mf, []byte(strings.ReplaceAll(body, "MAD", mad)), 0o644); err != nil {
		t.Fatal(err)
	}
	return mf
}

// Each model runs on its own Dockerfile, picked by GPU vendor, built in the catalog's
// docker/ folder with the manifest's build args; models that share a Dockerfile share an
// image.
func TestModelsGetTheirOwnImages(t *testing.T) {
	mad, _ := filepath.Abs("../tests/fixtures/mad")
	for _, c := range []struct {
		vendor string
		want   map[string]string // model -> Dockerfile base name
	}{
		{"amd", map[string]string{"echo_infer": "echo.ubuntu.amd.Dockerfile", "echo_train": "echo.ubuntu.amd.Dockerfile", "noop_smoke": "noop.amd.Dockerfile"}},
		{"nvidia", map[string]string{"echo_infer": "echo.ubuntu.nvidia.Dockerfile", "echo_train": "echo.ubuntu.nvidia.Dockerfile", "noop_smoke": "noop.nvidia.Dockerfile"}},
	} {
		mf := writeManifest(t, "name: mad\ngpu: {vendor: "+c.vendor+"}\nimage: {buildArgs: {BASE_DOCKER: shell:1}}\nmodels: {catalog: MAD/models.json, tags: [all]}\n")
		m, warns, err := LoadManifest(mf, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.vendor, err)
		}
		if len(warns) != 0 {
			t.Errorf("%s: warnings %q", c.vendor, warns)
		}
		for _, b := range m.Benchmarks {
			img := m.ImageOf(b)
			if filepath.Base(img.Dockerfile) != c.want[b.Name] || img.Context != filepath.Join(mad, "docker") ||
				len(img.BuildArgs) != 1 || img.BuildArgs[0].Value != "shell:1" {
				t.Errorf("%s: %s runs on %+v, want %s in %s/docker with the build arg", c.vendor, b.Name, img, c.want[b.Name], mad)
			}
		}
		uses := m.Images(m.Benchmarks)
		if len(uses) != 2 || strings.Join(uses[0].Benchmarks, ",") != "echo_infer,echo_train" || strings.Join(uses[1].Benchmarks, ",") != "noop_smoke" {
			t.Errorf("%s: images %+v", c.vendor, uses)
		}
	}
}

// models.gpuVendor picks the Dockerfiles without asking for GPUs: a CPU node (gpu.vendor
// none) builds and runs a catalog's AMD images.
func TestModelsGPUVendorPicksDockerfiles(t *testing.T) {
	mf := writeManifest(t, "name: mad\ngpu: {vendor: none}\nmodels: {catalog: MAD/models.json, tags: [all], gpuVendor: NVIDIA}\n")
	m, _, err := LoadManifest(mf, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Benchmarks {
		if df := filepath.Base(m.ImageOf(b).Dockerfile); !strings.HasSuffix(df, ".nvidia.Dockerfile") {
			t.Errorf("%s runs on %s", b.Name, df)
		}
	}
	_, _, err = LoadManifest(writeManifest(t, "name: mad\nmodels: {catalog: MAD/models.json, tags: [all], gpuVendor: intel}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `models.gpuVendor: "intel" is not a vendor a Dockerfile's CONTEXT line names (allowed: amd, nvidia)`) {
		t.Errorf("err = %v", err)
	}
}

func TestManifestImageOverridesTheCatalogs(t *testing.T) {
	mf := writeManifest(t, "name: mad\ngpu: {vendor: auto}\nimage: {ref: shell:1}\nmodels: {catalog: MAD/models.json, tags: [echo]}\n")
	m, warns, err := LoadManifest(mf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if uses := m.Images(m.Benchmarks); len(uses) != 1 || uses[0].Image.Ref != "shell:1" {
		t.Errorf("images %+v", uses)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "image: overrides the catalog's Dockerfiles: every model (echo_infer, echo_train) runs on shell:1") {
		t.Errorf("warnings %q", warns)
	}
}

func TestCatalogImageProblems(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"vendor auto cannot pick", "name: mad\nmodels: {catalog: MAD/models.json, tags: [smoke]}\n",
			"models.json:24: noop_smoke.dockerfile: the model's image is its dockerfile docker/noop picked by GPU vendor, and gpu.vendor is auto: set gpu.vendor (or models.gpuVendor, which picks only the Dockerfiles) to amd or nvidia"},
		{"guest os matches none", "name: mad\ngpu: {vendor: amd}\nmodels: {catalog: MAD/models.json, tags: [echo], guestOS: centos}\n",
			"echo_infer.dockerfile: dockerfile docker/echo: no Dockerfile is for gpu_vendor AMD and guest_os CENTOS (candidates: echo.ubuntu.amd.Dockerfile: gpu_vendor AMD, guest_os UBUNTU; echo.ubuntu.nvidia.Dockerfile: gpu_vendor NVIDIA, guest_os UBUNTU)"},
		{"a tag names one image", "name: mad\ngpu: {vendor: amd}\nimage: {tag: mine:1}\nmodels: {catalog: MAD/models.json, tags: [echo]}\n",
			"image.tag: names one image, and image.dockerfile is not given"},
		{"a benchmark without an image", "name: mad\ngpu: {vendor: amd}\nbenchmarks: [{name: own, command: [x]}]\nmodels: {catalog: MAD/models.json, tags: [echo]}\n",
			"image: is required: own run on the manifest's image"},
		{"no image at all", "name: plain\nbenchmarks: [{name: a, command: [x]}, {name: b, command: [x], image: {ref: busybox:1}}]\n",
			"image: is required: a run on the manifest's image (image.dockerfile to build an image, or image.ref to use an existing one)"},
		{"a benchmark image needs a Dockerfile or ref", "name: plain\nimage: {ref: x:1}\nbenchmarks: [{name: a, command: [x], image: {buildArgs: {A: b}}}]\n",
			"benchmarks[0].image: needs dockerfile (to build an image) or ref (to use an existing one)"},
		{"a benchmark image's ref is checked", "name: plain\nimage: {ref: x:1}\nbenchmarks: [{name: a, command: [x], image: {ref: 'Bad Ref'}}]\n",
			"benchmarks[0].image.ref: \"Bad Ref\" is not an image reference"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := LoadManifest(writeManifest(t, c.body), nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, c.want)
			}
			var me *document.Error
			if !errors.As(err, &me) || !me.InvalidInput() {
				t.Errorf("not bad input: %T", err)
			}
		})
	}
}

// Two benchmarks on one ref with another pull policy or pull secret are two images: one
// benchmark's settings are not dropped for the other's.
func TestImagesDifferInPullSettings(t *testing.T) {
	mf := writeManifest(t, "name: plain\nimage: {ref: 'base:1'}\nbenchmarks: [{name: a, command: [x]}, {name: b, command: [x], image: {ref: 'base:1', pull: always}}, {name: c, command: [x], image: {ref: 'base:1', pullSecret: REG}}]\n")
	m, _, err := LoadManifest(mf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if uses := m.Images(m.Benchmarks); len(uses) != 3 || uses[1].Image.Pull != "always" || uses[2].Image.PullSecret != "REG" {
		t.Errorf("images %+v", uses)
	}
}

// A benchmark's own image: wins over the manifest's for that benchmark only.
func TestBenchmarkOwnImage(t *testing.T) {
	mf := writeManifest(t, "name: plain\nimage: {ref: base:1}\nbenchmarks: [{name: a, command: [x]}, {name: b, command: [x], image: {ref: other:2}}, {name: c, command: [x]}]\n")
	m, _, err := LoadManifest(mf, nil)
	if err != nil {
		t.Fatal(err)
	}
	uses := m.Images(m.Benchmarks)
	if len(uses) != 2 || uses[0].Image.Ref != "base:1" || strings.Join(uses[0].Benchmarks, ",") != "a,c" || uses[1].Image.Ref != "other:2" {
		t.Errorf("images %+v", uses)
	}
}
