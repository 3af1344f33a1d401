package main

import (
	"strings"
	"testing"
)

// A flag the command does not have is invalid input (exit 4) with a hint that names what
// was probably meant: the nearest flag of the command, a short flag in the other case, a
// long flag written with one dash, or the command that has the flag; also as the JSON record
// of --log-format json.
func TestUnknownFlagHints(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--manfest", "m.yaml"},
			"benchctl: error: unknown flag: --manfest\nhint: did you mean --manifest?\n"},
		// An sbatch option submit does not have goes through --sbatch-arg.
		{[]string{"submit", "-m", "m.yaml", "--gres=gpu:8"},
			"benchctl: error: unknown flag: --gres\nhint: other sbatch options go through --sbatch-arg, one per option: --sbatch-arg=--gres=gpu:8\n"},
		{[]string{"submit", "-m", "m.yaml", "--gres", "gpu:8"},
			"benchctl: error: unknown flag: --gres\nhint: other sbatch options go through --sbatch-arg, one per option: --sbatch-arg=--gres=gpu:8\n"},
		{[]string{"submit", "-m", "m.yaml", "--gres"},
			"benchctl: error: unknown flag: --gres\nhint: other sbatch options go through --sbatch-arg, one per option: --sbatch-arg=--gres=VALUE\n"},
		{[]string{"submit", "--builder", "docker"},
			"benchctl: error: unknown flag: --builder\nhint: --builder is a flag of 'benchctl build', not of 'benchctl submit'\n"},
		{[]string{"build", "--buidler=docker"},
			"benchctl: error: unknown flag: --buidler\nhint: did you mean --builder?\n"},
		{[]string{"collect", "1", "--shared-dri", "/x"},
			"benchctl: error: unknown flag: --shared-dri\nhint: did you mean --shared-dir?\n"},
		{[]string{"version", "--log-levl", "debug"},
			"benchctl: error: unknown flag: --log-levl\nhint: did you mean --log-level?\n"},
		{[]string{"submit", "--dry", "-m", "m.yaml"},
			"benchctl: error: unknown flag: --dry\nhint: did you mean --dry-run?\n"},
		{[]string{"submit", "-n", "2"},
			"benchctl: error: unknown shorthand flag: 'n' in -n\nhint: did you mean -N (--nodes)?\n"},
		{[]string{"build", "-builder", "docker"},
			"benchctl: error: unknown shorthand flag: 'b' in -builder\nhint: did you mean --builder? (a long flag takes two dashes)\n"},
		{[]string{"validate", "-x"},
			"benchctl: error: unknown shorthand flag: 'x' in -x\nhint: the short flags of 'benchctl validate' are -h (--help), -m (--manifest), -o (--output), -q (--quiet)\n"},
		{[]string{"validate", "--builder", "docker"},
			"benchctl: error: unknown flag: --builder\nhint: --builder is a flag of 'benchctl build', not of 'benchctl validate'\n"},
		{[]string{"build", "--partial"},
			"benchctl: error: unknown flag: --partial\nhint: --partial is a flag of 'benchctl collect', not of 'benchctl build'\n"},
		{[]string{"validate", "--benchmarks", "a"},
			"benchctl: error: unknown flag: --benchmarks\nhint: --benchmarks is a flag of 'benchctl run' or 'benchctl submit', not of 'benchctl validate'\n"},
		{[]string{"version", "-N", "2"},
			"benchctl: error: unknown shorthand flag: 'N' in -N\nhint: -N is a flag of 'benchctl submit', not of 'benchctl version'\n"},
		{[]string{"version", "--frobnicate"},
			"benchctl: error: unknown flag: --frobnicate\nhint: run 'benchctl version --help' for its flags\n"},
		{[]string{"validate", "-m", "m.yaml", "-o", "xml"},
			"benchctl: error: invalid --output \"xml\"\nhint: use --output yaml or json\n"},
		{[]string{"build", "--builder", "podman"},
			"benchctl: error: invalid --builder \"podman\"\nhint: use --builder docker or buildkit\n"},
	} {
		code, out, errs := run(t, c.args...)
		if code != exitInvalid || out != "" || errs != c.want {
			t.Errorf("%v: exit %d, stdout %q\n got %q\nwant %q", c.args, code, out, errs, c.want)
		}
	}
	code, _, errs := run(t, "--log-format", "json", "validate", "--manfest", "m.yaml")
	if want := `"level":"ERROR","msg":"unknown flag: --manfest","hint":"did you mean --manifest?","exitCode":4}`; code != 4 || !strings.Contains(errs, want) {
		t.Errorf("json: exit %d\n%s", code, errs)
	}
}
