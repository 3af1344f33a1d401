package main

import (
	"strings"
	"testing"
)

// models list --gpu-vendor shows which Dockerfile each model's prefix gives, by the
// Dockerfiles' CONTEXT lines, as madengine picks them.
func TestModelsListDockerfiles(t *testing.T) {
	catalog := "../../tests/fixtures/mad/models.json"
	for vendor, want := range map[string]string{
		"amd": `NAME        TAGS            GPUS  TIMEOUT  DOCKERFILE                         COMMAND
echo_infer  inference,echo  all   2h0m0s   docker/echo.ubuntu.amd.Dockerfile  bash scripts/echo_model/run.sh --mode infer
echo_train  training,echo   2     2h0m0s   docker/echo.ubuntu.amd.Dockerfile  bash scripts/echo_model/run.sh --mode train
noop_smoke  smoke           all   2h0m0s   docker/noop.amd.Dockerfile         bash scripts/echo_model/run.sh
`,
		"NVIDIA": `NAME        TAGS            GPUS  TIMEOUT  DOCKERFILE                            COMMAND
echo_infer  inference,echo  all   2h0m0s   docker/echo.ubuntu.nvidia.Dockerfile  bash scripts/echo_model/run.sh --mode infer
echo_train  training,echo   2     2h0m0s   docker/echo.ubuntu.nvidia.Dockerfile  bash scripts/echo_model/run.sh --mode train
noop_smoke  smoke           all   2h0m0s   docker/noop.nvidia.Dockerfile         bash scripts/echo_model/run.sh
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
