package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/scheduler/slurm"
)

// submitDry runs submit --dry-run -o json and returns sbatch's arguments and the script.
func submitDry(t *testing.T, args ...string) (slurm.DryRunDocument, int, string) {
	t.Helper()
	code, out, errs := run(t, append([]string{"submit", "--dry-run", "-o", "json"}, args...)...)
	var dry slurm.DryRunDocument
	if code == 0 && json.Unmarshal([]byte(out), &dry) != nil {
		t.Fatalf("not JSON: %s", out)
	}
	return dry, code, errs
}

// submit asks Slurm for the GPUs gpu.count asks for (--gpus-per-node), unless the
// manifest's slurm.gpusPerNode or --gpus-per-node says otherwise (0: ask nothing).
func TestSubmitAsksForGPUCount(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("name: x\nimage: {ref: busybox}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"+body), 0o644)
		return p
	}
	eight := write("eight.yaml", "gpu: {vendor: amd, count: 8}\n")
	off := write("off.yaml", "gpu: {vendor: amd, count: 8}\nslurm: {gpusPerNode: 0}\n")
	all := write("all.yaml", "gpu: {vendor: amd}\n")
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"-m", eight}, true},
		{[]string{"-m", eight, "--gpus-per-node", "0"}, false},
		{[]string{"-m", off}, false},
		{[]string{"-m", all}, false},
	} {
		dry, code, errs := submitDry(t, append(c.args, "--shared-dir", dir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", c.args, code, errs)
		}
		has := slices.Contains(dry.Sbatch, "--gpus-per-node=8")
		if has != c.want || strings.Contains(strings.Join(dry.Sbatch, " "), "--gpus-per-node=0") {
			t.Errorf("%v: sbatch %v", c.args, dry.Sbatch)
		}
		if has && !strings.Contains(dry.Script, "--gpus-per-node=8") {
			t.Errorf("%v: the script's comment lacks it:\n%s", c.args, dry.Script)
		}
	}
}

// In a MAD checkout submit takes --tags as run does: the job runs 'benchctl run --tags' in
// the checkout, and asks Slurm for the most GPUs a selected model's n_gpus needs.
func TestSubmitTagsInAMADCheckout(t *testing.T) {
	mad, _ := filepath.Abs("../../tests/fixtures/mad")
	t.Chdir(mad)
	shared := t.TempDir()
	ctxFile := filepath.Join(t.TempDir(), "ctx.json")
	os.WriteFile(ctxFile, []byte(`{"gpu_vendor": "AMD"}`), 0o644)
	dry, code, errs := submitDry(t, "--tags", "training", "--context-file", ctxFile, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !slices.Contains(dry.Sbatch, "--gpus-per-node=2") {
		t.Errorf("sbatch %v", dry.Sbatch)
	}
	for _, want := range []string{"\ncd " + mad + "\n", " run --tags training --context-file " + ctxFile + " || status=$?"} {
		if !strings.Contains(dry.Script, want) {
			t.Errorf("no %q in the script:\n%s", want, dry.Script)
		}
	}
	// --context inline goes into the script, quoted; one that names a credential does not.
	dry, code, errs = submitDry(t, "--tags", "echo", "--context", `{"gpu_vendor": "AMD"}`, "--shared-dir", shared)
	if code != 0 || !strings.Contains(dry.Script, ` run --tags echo --context '{"gpu_vendor": "AMD"}' || status=$?`) || slices.ContainsFunc(dry.Sbatch, func(a string) bool { return strings.HasPrefix(a, "--gpus-per-node") }) {
		t.Errorf("exit %d\n%s\n%s", code, dry.Script, errs)
	}
	_, code, errs = submitDry(t, "--tags", "echo", "--context", `{"gpu_vendor": "AMD", "docker_env_vars": {"HF_TOKEN": "hf-secret-value"}}`, "--shared-dir", shared)
	if code != exitInvalid || !strings.Contains(errs, "--context-file") || strings.Contains(errs, "hf-secret-value") {
		t.Errorf("a credential in --context: exit %d\n%s", code, errs)
	}
	// --manifest and --tags: refused as run refuses them.
	if _, code, errs := submitDry(t, "--tags", "echo", "-m", "x.yaml"); code != exitInvalid || !strings.Contains(errs, "--manifest and --tags are both given") {
		t.Errorf("both: exit %d\n%s", code, errs)
	}
}

// An sbatch option given to submit as its own flag points at --sbatch-arg.
func TestSubmitUnknownSbatchOptionHint(t *testing.T) {
	for _, c := range []struct{ arg, hint string }{
		{"--gres=gpu:8", "hint: other sbatch options go through --sbatch-arg, one per option: --sbatch-arg=--gres=gpu:8\n"},
		{"--constraint", "hint: other sbatch options go through --sbatch-arg, one per option: --sbatch-arg=--constraint=VALUE\n"},
		{"--partiton=gpu", "hint: did you mean --partition?\n"},
	} {
		code, _, errs := run(t, "submit", "-m", "m.yaml", c.arg)
		if code != exitInvalid || !strings.HasSuffix(errs, c.hint) {
			t.Errorf("%s: exit %d\n%s", c.arg, code, errs)
		}
	}
}
