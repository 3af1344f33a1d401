package manifest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest/document"
)

const jobSecret = "0123456789abcdef-BARRIER-KEY"

// ownVarMsg is the message for ${NAME} of one of benchctl's own variables, in any field.
func ownVarMsg(name string) string {
	return "${" + name + "}: benchctl's own variables (BENCHCTL_*, among them the barrier's key BENCHCTL_JOB_SECRET) never reach a manifest value; " +
		"use a variable of your own, or read BENCHCTL_JOB_ID, BENCHCTL_ATTEMPT, BENCHCTL_BENCHMARK or BENCHCTL_OUTPUT_DIR in the benchmark, where benchctl sets them"
}

// ${BENCHCTL_*} in any expanded field, and a BENCHCTL_* name under secrets, are bad input
// (exit 4), located at the field; the variable is never even read.
func TestBenchctlVariablesNeverReachAManifestValue(t *testing.T) {
	long := strings.Repeat("a", 6000)
	cases := []struct {
		name, body string
		want       string // "line: path: message", exactly
	}{
		{"env", okHead + okBench + "env: {X: \"${BENCHCTL_JOB_SECRET}\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"env with a default", okHead + okBench + "env: {X: \"${BENCHCTL_JOB_SECRET:-none}\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"env required", okHead + okBench + "env: {X: \"${BENCHCTL_JOB_SECRET:?set it}\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"inside a longer value", okHead + okBench + "env: {X: \"key=${BENCHCTL_JOB_SECRET};\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"unset one", okHead + okBench + "env: {X: \"${BENCHCTL_NOT_SET}\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_NOT_SET")},
		{"the bare prefix", okHead + okBench + "env: {X: \"${BENCHCTL_}\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_")},
		{"a 6000-character value", okHead + okBench + "env: {X: \"" + long + "${BENCHCTL_JOB_SECRET}\"}\n", "4: env.X: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"benchmark env", okHead + "benchmarks:\n  - name: b\n    command: [x]\n    env: {Y: \"${BENCHCTL_JOB_SECRET}\"}\n", "6: benchmarks[0].env.Y: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"build arg", "name: t\nimage:\n  dockerfile: Dockerfile\n  buildArgs: {K: \"${BENCHCTL_JOB_SECRET}\"}\n" + okBench, "4: image.buildArgs.K: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"tag", "name: t\nimage: {dockerfile: Dockerfile, tag: \"x:${BENCHCTL_JOB_ID}\"}\n" + okBench, "2: image.tag: " + ownVarMsg("BENCHCTL_JOB_ID")},
		{"ref", "name: t\nimage: {ref: \"busybox:${BENCHCTL_ATTEMPT}\"}\n" + okBench, "2: image.ref: " + ownVarMsg("BENCHCTL_ATTEMPT")},
		{"mount", okHead + okBench + "mounts: [\"${BENCHCTL_SHARED_DIR}:/shared\"]\n", "4: mounts[0]: " + ownVarMsg("BENCHCTL_SHARED_DIR")},
		{"catalog", okHead + "models: {catalog: \"${BENCHCTL_JOB_SECRET}/models.json\", tags: [all]}\n", "3: models.catalog: " + ownVarMsg("BENCHCTL_JOB_SECRET")},
		{"secret", okHead + okBench + "secrets: [HF_TOKEN, BENCHCTL_JOB_SECRET]\n",
			"4: secrets[1]: BENCHCTL_JOB_SECRET cannot be a secret: benchctl's own variables (BENCHCTL_*, among them the barrier's key BENCHCTL_JOB_SECRET) never reach a container through the manifest; " +
				"remove it from secrets (a credential of your own needs a name of your own)"},
		{"secret bare prefix", okHead + okBench + "secrets: [BENCHCTL_]\n", "4: secrets[0]: BENCHCTL_ cannot be a secret: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeManifest(t, "m.yaml", c.body)
			var read []string
			lookup := func(k string) (string, bool) {
				read = append(read, k)
				return env("BENCHCTL_JOB_SECRET", jobSecret, "BENCHCTL_JOB_ID", "7", "BENCHCTL_ATTEMPT", "0",
					"BENCHCTL_SHARED_DIR", "/shared", "HF_TOKEN", "hf_x")(k)
			}
			m, _, err := Load(p, Options{Lookup: lookup})
			var me *document.Error
			if !errors.As(err, &me) || !me.InvalidInput() || m != nil {
				t.Fatalf("want an invalid-input *document.Error, got %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, p+":"+c.want) {
				t.Errorf("error does not contain\n  %s:%s\ngot\n  %s", p, c.want, msg)
			}
			if strings.Contains(msg, jobSecret) || strings.Contains(msg, long) {
				t.Errorf("the error repeats the secret or the whole value: %.300s", msg)
			}
			for _, k := range read {
				if strings.HasPrefix(k, "BENCHCTL_") {
					t.Errorf("read $%s", k)
				}
			}
		})
	}
}

// What only looks like benchctl's variables is not one of them: "$$" is a literal "$", and
// Linux variable names are case-sensitive, so benchctl_job_secret is another variable (that
// benchctl never sets; its name looks like a credential, so its value is redacted).
func TestBenchctlLookAlikesAreOrdinary(t *testing.T) {
	p := writeManifest(t, "m.yaml", okHead+okBench+
		"env: {LITERAL: \"$${BENCHCTL_JOB_SECRET}\", LOWER: \"${benchctl_job_secret}\", NO_SEP: \"${BENCHCTL}\", INNER: \"${MY_BENCHCTL_DIR}\"}\n"+
		"mounts: [\"/a:/b/$${BENCHCTL_JOB_ID}\"]\n")
	lookup := env("BENCHCTL_JOB_SECRET", jobSecret, "benchctl_job_secret", "lower-value", "BENCHCTL", "bare", "MY_BENCHCTL_DIR", "/mine")
	m, warns, err := Load(p, Options{Lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]EnvVar{}
	for _, e := range m.Env {
		got[e.Name] = e
	}
	for name, want := range map[string]EnvVar{
		"LITERAL": {"LITERAL", "${BENCHCTL_JOB_SECRET}", false},
		"LOWER":   {"LOWER", "lower-value", true},
		"NO_SEP":  {"NO_SEP", "bare", false},
		"INNER":   {"INNER", "/mine", false},
	} {
		if got[name] != want {
			t.Errorf("%s = %+v, want %+v", name, got[name], want)
		}
	}
	if len(m.Mounts) != 1 || m.Mounts[0].Target != "/b/${BENCHCTL_JOB_ID}" {
		t.Errorf("mounts %+v", m.Mounts)
	}
	var secretWarns []string
	for _, w := range warns {
		if strings.Contains(w, "looks like a secret") {
			secretWarns = append(secretWarns, w)
		}
	}
	if len(secretWarns) != 1 || !strings.Contains(secretWarns[0], "m.yaml:4: env.LOWER: takes ${benchctl_job_secret}, whose name looks like a secret") {
		t.Errorf("warnings %q", warns)
	}
	if out, _ := json.Marshal(m.Redacted()); strings.Contains(string(out), jobSecret) || strings.Contains(string(out), "lower-value") {
		t.Errorf("redacted: %s", out)
	}
}

// An env value that takes a variable named like a credential, not listed under secrets, is
// loaded with its value (the container needs it), marked secret so that every printed or
// stored copy shows ***, and warned about at its line.
func TestCredentialLikeEnvValueIsRedacted(t *testing.T) {
	token := "tok-" + strings.Repeat("x", 6000)
	p := writeManifest(t, "m.yaml", okHead+
		"benchmarks:\n  - name: b\n    command: [x]\n    env: {KEY: \"${WANDB_API_KEY}\"}\n"+
		"env:\n  AUTH_HEADER: \"Bearer ${API_TOKEN}\"\n  VERSION: \"${VERSION:-1}\"\n  TOKENIZERS: \"${TOKENIZERS_PARALLELISM:-false}\"\n")
	m, warns, err := Load(p, Options{Lookup: env("API_TOKEN", token, "WANDB_API_KEY", "wandb-value")})
	if err != nil {
		t.Fatal(err)
	}
	want := []EnvVar{{"AUTH_HEADER", "Bearer " + token, true}, {"TOKENIZERS", "false", false}, {"VERSION", "1", false}}
	if len(m.Env) != 3 || m.Env[0] != want[0] || m.Env[1] != want[1] || m.Env[2] != want[2] {
		t.Errorf("env %.200v", m.Env)
	}
	if b := m.Benchmarks[0].Env; len(b) != 1 || b[0] != (EnvVar{"KEY", "wandb-value", true}) {
		t.Errorf("benchmark env %+v", b)
	}
	out, _ := json.Marshal(m.Redacted())
	if strings.Contains(string(out), "tok-x") || strings.Contains(string(out), "wandb-value") || strings.Count(string(out), `"value":"***"`) != 2 {
		t.Errorf("redacted: %.500s", out)
	}
	if m.Env[0].Value != "Bearer "+token {
		t.Error("Redacted modified the original")
	}
	wantWarn := []string{
		p + ":8: env.AUTH_HEADER: takes ${API_TOKEN}, whose name looks like a secret, so the value is shown as *** wherever benchctl prints or stores it (job.json, validate, the dry run); " +
			"list API_TOKEN under secrets to say it is one, or give the variable a name that does not look like a credential",
		p + ":6: benchmarks[0].env.KEY: takes ${WANDB_API_KEY}, whose name looks like a secret, so the value is shown as *** wherever benchctl prints or stores it (job.json, validate, the dry run); " +
			"list WANDB_API_KEY under secrets to say it is one, or give the variable a name that does not look like a credential",
	}
	if strings.Join(warns, "\n") != strings.Join(wantWarn, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(warns, "\n"), strings.Join(wantWarn, "\n"))
	}

	// Listed under secrets, the same value is a secret and nothing is warned.
	p = writeManifest(t, "m.yaml", okHead+okBench+"secrets: [API_TOKEN]\nenv: {AUTH_HEADER: \"Bearer ${API_TOKEN}\"}\n")
	m, warns, err = Load(p, Options{Lookup: env("API_TOKEN", token)})
	if err != nil || len(warns) != 0 || !m.Env[0].Secret {
		t.Fatalf("%v %q %+v", err, warns, m.Env)
	}
}

// A token written into a MAD model's url is *** in the redacted manifest (job.json, the
// dry run), in both forms git hosts take.
func TestRedactedHidesURLTokens(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:ghp_secret@github.com/org/x.git": "https://user:***@github.com/org/x.git",
		"https://ghp_secret@github.com/org/x.git":      "https://***@github.com/org/x.git",
		"https://github.com/org/x.git":                 "https://github.com/org/x.git",
		"git@github.com:org/x.git":                     "git@github.com:org/x.git",
		"ssh://git@host/x.git":                         "ssh://git@host/x.git",
		"file:///srv/x":                                "file:///srv/x",
	} {
		m := &Manifest{Benchmarks: []Benchmark{{Name: "b", Model: &Model{URL: in}}}}
		if got := m.Redacted().Benchmarks[0].Model.URL; got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
		if m.Benchmarks[0].Model.URL != in {
			t.Errorf("the manifest's own url changed: %s", m.Benchmarks[0].Model.URL)
		}
	}
}
