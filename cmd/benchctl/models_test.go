package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// models list --gpu-vendor shows which Dockerfile each model's prefix gives, by the
// Dockerfiles' CONTEXT lines, as madengine picks them.
func TestModelsListDockerfiles(t *testing.T) {
	catalog := "../../tests/fixtures/mad/models.json"
	for vendor, want := range map[string]string{
		"amd": `NAME        TAGS            GPUS  TIMEOUT  DOCKERFILE                         RUNS IN                     COMMAND
echo_infer  inference,echo  all   2h0m0s   docker/echo.ubuntu.amd.Dockerfile  copy of scripts/echo_model  bash run.sh --mode infer
echo_train  training,echo   2     2h0m0s   docker/echo.ubuntu.amd.Dockerfile  copy of scripts/echo_model  bash run.sh --mode train
noop_smoke  smoke           all   2h0m0s   docker/noop.amd.Dockerfile         copy of scripts/echo_model  bash run.sh
`,
		"NVIDIA": `NAME        TAGS            GPUS  TIMEOUT  DOCKERFILE                            RUNS IN                     COMMAND
echo_infer  inference,echo  all   2h0m0s   docker/echo.ubuntu.nvidia.Dockerfile  copy of scripts/echo_model  bash run.sh --mode infer
echo_train  training,echo   2     2h0m0s   docker/echo.ubuntu.nvidia.Dockerfile  copy of scripts/echo_model  bash run.sh --mode train
noop_smoke  smoke           all   2h0m0s   docker/noop.nvidia.Dockerfile         copy of scripts/echo_model  bash run.sh
`,
	} {
		code, out, errs := run(t, "models", "list", "--catalog", catalog, "--gpu-vendor", vendor)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d\n%s\nwant:\n%s\nstderr: %s", vendor, code, out, want, errs)
		}
	}
	code, out, errs := run(t, "models", "list", "--catalog", catalog, "--gpu-vendor", "amd", "--guest-os", "centos", "-o", "json")
	if code != 0 || !strings.Contains(out, `"dockerfileError": "model echo_infer: dockerfile docker/echo: no Dockerfile is for gpu_vendor AMD and guest_os CENTOS`) ||
		!strings.Contains(errs, "candidates: echo.ubuntu.amd.Dockerfile: gpu_vendor AMD, guest_os UBUNTU") {
		t.Errorf("no match: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := run(t, "models", "list", "--catalog", catalog, "--gpu-vendor", "intel"); code != exitInvalid || !strings.Contains(errs, `invalid --gpu-vendor "intel"`) {
		t.Errorf("a bad vendor: exit %d %s", code, errs)
	}
}

// models list without --catalog reads ./models.json, as run --tags does; with neither, it
// says what to give. In a terminal and in a pipe alike.
func TestModelsListDefaultCatalog(t *testing.T) {
	fixture, err := filepath.Abs("../../tests/fixtures/mad/models.json")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := run(t, "models", "list", "--catalog", fixture, "--tags", "smoke")
	if !strings.Contains(want, "noop_smoke") {
		t.Fatalf("the fixture lists no noop_smoke:\n%s", want)
	}
	t.Chdir(filepath.Dir(fixture))
	for _, tty := range []bool{true, false} {
		if code, out, errs := runMode(t, tty, "models", "list", "--tags", "smoke"); code != 0 || out != want || errs != "" {
			t.Errorf("./models.json (tty %v): exit %d, stderr %q\n%s\nwant:\n%s", tty, code, errs, out, want)
		}
	}
	empty := t.TempDir()
	t.Chdir(empty)
	if err := os.Mkdir("models.json", 0o755); err != nil { // a folder is not a catalog
		t.Fatal(err)
	}
	wantErr := "benchctl: error: no --catalog given and no models.json in " + empty + "\n" +
		"hint: give the catalog (benchctl models list --catalog models.json), or run in a MAD checkout\n"
	for _, tty := range []bool{true, false} {
		if code, out, errs := runMode(t, tty, "models", "list"); code != exitInvalid || out != "" || errs != wantErr {
			t.Errorf("no catalog (tty %v): exit %d, stdout %q\n got %q\nwant %q", tty, code, out, errs, wantErr)
		}
	}
}
