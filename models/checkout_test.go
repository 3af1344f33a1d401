package models

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/logscan"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

const madFixture = "../tests/fixtures/mad"

func lookup(kv ...string) manifest.Lookup {
	return func(k string) (string, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

// Each model runs on its own Dockerfile, picked by gpu_vendor (and guest_os) from its
// CONTEXT line and built in the checkout's docker/ folder, in the checkout mounted at
// /myworkspace, as madengine runs it.
func TestCheckoutPicksDockerfilesByVendor(t *testing.T) {
	mad, _ := filepath.Abs(madFixture)
	for _, c := range []struct {
		context string
		tags    []string
		want    map[string]string // model -> Dockerfile
	}{
		{`{"gpu_vendor": "AMD"}`, []string{"echo,smoke"}, map[string]string{"echo_infer": "echo.ubuntu.amd.Dockerfile", "echo_train": "echo.ubuntu.amd.Dockerfile", "noop_smoke": "noop.amd.Dockerfile"}},
		{`{"gpu_vendor": "amd", "guest_os": "UBUNTU"}`, []string{"echo", " smoke "}, map[string]string{"echo_infer": "echo.ubuntu.amd.Dockerfile", "echo_train": "echo.ubuntu.amd.Dockerfile", "noop_smoke": "noop.amd.Dockerfile"}},
		{`{"gpu_vendor": "NVIDIA"}`, []string{"all"}, map[string]string{"echo_infer": "echo.ubuntu.nvidia.Dockerfile", "echo_train": "echo.ubuntu.nvidia.Dockerfile", "noop_smoke": "noop.nvidia.Dockerfile"}},
		{`{"gpu_vendor": "Nvidia", "guest_os": "ubuntu"}`, []string{"inference"}, map[string]string{"echo_infer": "echo.ubuntu.nvidia.Dockerfile"}},
	} {
		m, warns, err := CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: c.tags, Context: c.context})
		if err != nil {
			t.Fatalf("%s: %v", c.context, err)
		}
		if len(warns) != 0 {
			t.Errorf("%s: warnings %q", c.context, warns)
		}
		if len(m.Benchmarks) != len(c.want) {
			t.Fatalf("%s: benchmarks %d, want %d", c.context, len(m.Benchmarks), len(c.want))
		}
		for _, b := range m.Benchmarks {
			img := m.ImageOf(b)
			if img.Dockerfile != filepath.Join(mad, "docker", c.want[b.Name]) || img.Context != filepath.Join(mad, "docker") {
				t.Errorf("%s: %s runs on %+v, want %s", c.context, b.Name, img, c.want[b.Name])
			}
			if b.Workdir != Workspace+"/"+RunDirectory || b.Model.RunDir != "scripts/echo_model" {
				t.Errorf("%s: %s works in %q, a copy of %q", c.context, b.Name, b.Workdir, b.Model.RunDir)
			}
		}
		// The checkout is not mounted: each model runs in a workspace of its node's own,
		// which the runner makes and mounts at /myworkspace.
		if len(m.Mounts) != 0 {
			t.Errorf("%s: mounts %+v", c.context, m.Mounts)
		}
		if m.Name != "mad" || m.Path != filepath.Join(mad, "models.json") || !strings.HasPrefix(m.Digest, "sha256:") {
			t.Errorf("%s: name %q path %q digest %q", c.context, m.Name, m.Path, m.Digest)
		}
	}
}

// The context's env, mounts, build args and GPUs land where a manifest's would.
func TestCheckoutContextLandsInTheManifest(t *testing.T) {
	mad, _ := filepath.Abs(madFixture)
	host := t.TempDir()
	ctxFile := filepath.Join(t.TempDir(), "ctx.json")
	os.WriteFile(ctxFile, []byte(`{
  "gpu_vendor": "AMD",
  "docker_env_vars": {"HSA_ENABLE_SDMA": "0", "NCCL_DEBUG": "INFO", "BATCH": 32, "RATIO": 1.50, "HOME_DIR": "${HOME_DIR:-/root}"},
  "docker_mounts": {"/data": "`+host+`", "/scripts-copy": "scripts"},
  "docker_build_arg": {"BASE_DOCKER": "rocm/pytorch:6.4", "JOBS": 8},
  "docker_gpus": "0-3"
}`), 0o644)
	m, warns, err := CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: []string{"echo"}, ContextFile: ctxFile})
	if err != nil || len(warns) != 0 {
		t.Fatalf("%v %q", err, warns)
	}
	env, _ := json.Marshal(m.Env)
	if string(env) != `[{"name":"BATCH","value":"32"},{"name":"HOME_DIR","value":"/root"},{"name":"HSA_ENABLE_SDMA","value":"0"},{"name":"NCCL_DEBUG","value":"INFO"},{"name":"RATIO","value":"1.50"}]` {
		t.Errorf("env %s", env)
	}
	want := []manifest.Mount{{Source: host, Target: "/data"}, {Source: filepath.Join(mad, "scripts"), Target: "/scripts-copy"}}
	if len(m.Mounts) != 2 || m.Mounts[0] != want[0] || m.Mounts[1] != want[1] {
		t.Errorf("mounts %+v", m.Mounts)
	}
	for _, b := range m.Benchmarks {
		args, _ := json.Marshal(m.ImageOf(b).BuildArgs)
		if string(args) != `[{"name":"BASE_DOCKER","value":"rocm/pytorch:6.4"},{"name":"JOBS","value":"8"}]` {
			t.Errorf("%s: build args %s", b.Name, args)
		}
	}
	if m.GPU != (manifest.GPU{Vendor: "amd", Count: 4}) {
		t.Errorf("gpu %+v", m.GPU)
	}
	for gpus, want := range map[string]manifest.Count{`"all"`: 0, `"0,1,2"`: 3, `"0"`: 1, `0`: 1, `" 1, 0 "`: 2} {
		m, _, err := CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: []string{"echo"}, Context: `{"gpu_vendor": "AMD", "docker_gpus": ` + gpus + `}`})
		if err != nil || m.GPU.Count != want {
			t.Errorf("docker_gpus %s: %v %+v", gpus, err, m)
		}
	}
}

// A credential-like docker_env_vars value reaches the container's environment and no
// printed or stored form: Redacted shows ***, the digest does not depend on it, and an
// error about another key does not quote it.
func TestCheckoutCredentialIsRedacted(t *testing.T) {
	token := "hf_" + strings.Repeat("s3cr3t", 10)
	ctx := func(tok, extra string) string {
		return `{"gpu_vendor": "AMD", "docker_env_vars": {"HF_TOKEN": "` + tok + `", "WANDB_API_KEY": "${WANDB}", "MAX_TOKEN": "7"` + extra + `}}`
	}
	m, warns, err := CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: []string{"echo"}, Context: ctx(token, ""), Lookup: lookup("WANDB", "wandb-value")})
	if err != nil {
		t.Fatal(err)
	}
	secret := map[string]bool{}
	for _, e := range m.Env {
		secret[e.Name] = e.Secret
		if e.Name == "HF_TOKEN" && e.Value != token {
			t.Errorf("the container would get %q", e.Value)
		}
	}
	if !secret["HF_TOKEN"] || !secret["WANDB_API_KEY"] || secret["MAX_TOKEN"] {
		t.Errorf("secret %v", secret)
	}
	out, _ := json.Marshal(m.Redacted())
	if strings.Contains(string(out), "s3cr3t") || strings.Contains(string(out), "wandb-value") || strings.Count(string(out), `"value":"***"`) != 2 {
		t.Errorf("redacted: %s", out)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
	other, _, err := CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: []string{"echo"}, Context: ctx("hf_other", ""), Lookup: lookup("WANDB", "w")})
	if err != nil || other.Digest != m.Digest {
		t.Errorf("the digest depends on the token: %v %s %s", err, other.Digest, m.Digest)
	}
	_, _, err = CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: []string{"echo"}, Context: ctx(token, `, "NODE_RANK": "1"`), Lookup: lookup("WANDB", "w")})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "docker_env_vars.NODE_RANK: is set by benchctl") {
		t.Errorf("err = %v", err)
	}
}

// Dir "" is the current folder; a folder name that is not a manifest name is made one, and
// a $ in it is not taken for a variable.
func TestCheckoutFolder(t *testing.T) {
	mad, _ := filepath.Abs(madFixture)
	t.Run("current folder", func(t *testing.T) {
		t.Chdir(mad)
		m, _, err := CheckoutManifest(CheckoutOptions{Tags: []string{"smoke"}, Context: `{"gpu_vendor": "NVIDIA"}`})
		if err != nil || m.Models.Catalog != filepath.Join(mad, "models.json") || len(m.Benchmarks) != 1 {
			t.Fatalf("%v %+v", err, m)
		}
	})
	t.Run("odd name", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "My_MAD..${HOME}-")
		if err := os.CopyFS(dir, os.DirFS(mad)); err != nil {
			t.Fatal(err)
		}
		m, _, err := CheckoutManifest(CheckoutOptions{Dir: dir, Tags: []string{"smoke"}, Context: `{"gpu_vendor": "AMD"}`})
		if err != nil || m.Name != manifest.SuggestName("My_MAD..${HOME}-") || m.Models.Catalog != filepath.Join(dir, "models.json") {
			t.Fatalf("%v %+v", err, m)
		}
	})
}

// Bad input is one clear error that names where, and is invalid input (exit 4); hostile
// input is refused the same way, never with a panic.
func TestCheckoutBadInput(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	badFile := file("bad.json", `{"gpu_vendor": "AMD", "docker_env_vars": {"FOO": false}}`)
	badLine := file("line.json", "{\n  \"gpu_vendor\": \"AMD\",\n  \"guest_os\" \"UBUNTU\"\n}\n")
	big := file("big.json", `{"docker_env_vars": {"A": "`+strings.Repeat("x", 5<<20)+`"}}`)
	long := strings.Repeat("k", 6000)
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	amd := `"gpu_vendor": "AMD", `
	for _, c := range []struct {
		name string
		o    CheckoutOptions
		want string
	}{
		{"a value that is not a string", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"FOO": true}}`},
			`--context: docker_env_vars.FOO: must be a string, got the boolean true (write it in quotes: "true")`},
		{"an object for a value", CheckoutOptions{Context: `{` + amd + `"docker_build_arg": {"A": {"b": "c"}}}`},
			"--context: docker_build_arg.A: must be a string, got an object"},
		{"env that is not an object", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": ["A=1"]}`},
			"--context: docker_env_vars: must be an object of NAME: value, got a list"},
		{"in a file", CheckoutOptions{ContextFile: badFile}, "--context-file " + badFile + ": docker_env_vars.FOO: must be a string, got the boolean false"},
		{"invalid JSON", CheckoutOptions{Context: `{"gpu_vendor": "AMD",}`},
			"--context: line 1, column 22 (byte offset 21): invalid JSON: invalid character '}' looking for beginning of object key string"},
		{"invalid JSON on line 3", CheckoutOptions{ContextFile: badLine}, "--context-file " + badLine + ": line 3, column 14 (byte offset 38): invalid JSON: invalid character '\"' after object key"},
		{"unclosed JSON", CheckoutOptions{Context: `{"gpu_vendor": "AMD"`}, "--context: line 1: invalid JSON: unexpected end of input"},
		{"not an object", CheckoutOptions{Context: `["AMD"]`}, `--context: must be a JSON object of madengine context keys ({"gpu_vendor": "AMD", ...}), got a list`},
		{"a string", CheckoutOptions{Context: `"AMD"`}, `--context: must be a JSON object of madengine context keys ({"gpu_vendor": "AMD", ...}), got the string "AMD"`},
		{"a duplicate key", CheckoutOptions{Context: `{"gpu_vendor": "AMD", "gpu_vendor": "NVIDIA"}`}, `--context: line 1, column 34 (byte offset 33): duplicate key "gpu_vendor" (first defined at line 1)`},
		{"no tags", CheckoutOptions{Tags: []string{}}, "invalid input: --tags: is empty: give the tags or names of the models to run"},
		{"blank tags", CheckoutOptions{Tags: []string{" , ", ""}}, "--tags: is empty"},
		{"both contexts", CheckoutOptions{Context: `{}`, ContextFile: badFile}, "--context: give --context or --context-file, not both"},
		{"a FIFO", CheckoutOptions{ContextFile: fifo}, "--context-file " + fifo + ": is a FIFO (named pipe), not a file: give a JSON file"},
		{"a folder", CheckoutOptions{ContextFile: dir}, "--context-file " + dir + ": is a folder, not a file"},
		{"a missing file", CheckoutOptions{ContextFile: filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
		{"a 5 MiB file", CheckoutOptions{ContextFile: big}, "--context-file " + big + ": is larger than 4 MiB; a context is a small JSON object"},
		{"no models.json", CheckoutOptions{Dir: dir, Context: `{"gpu_vendor": "AMD"}`}, "--tags: no models.json in " + dir + ": run in a MAD checkout, or give --manifest"},
		{"a missing folder", CheckoutOptions{Dir: filepath.Join(dir, "none")}, "no models.json in " + filepath.Join(dir, "none")},
		{"an unknown key", CheckoutOptions{Context: `{` + amd + `"frobnicate": 1}`},
			"--context: frobnicate: unknown key (benchctl accepts gpu_vendor, guest_os, docker_env_vars, docker_mounts, docker_build_arg, docker_gpus, log_error_pattern_scan, log_error_patterns, log_error_benign_patterns, tools, pre_scripts, post_scripts, encapsulate_script)"},
		{"a log scan switch that is not a boolean", CheckoutOptions{Context: `{` + amd + `"log_error_pattern_scan": "maybe"}`}, `--context: log_error_pattern_scan: must be true or false, got the string "maybe"`},
		{"no error patterns", CheckoutOptions{Context: `{` + amd + `"log_error_patterns": []}`}, "--context: log_error_patterns: is empty: it replaces the default error patterns"},
		{"benign patterns as a string", CheckoutOptions{Context: `{` + amd + `"log_error_benign_patterns": "a,b"}`}, "--context: log_error_benign_patterns: must be a list of strings"},
		{"slurm", CheckoutOptions{Context: `{` + amd + `"slurm": {"nodes": 2}}`}, "--context: slurm: is not supported: use `benchctl submit` flags (--nodes,"},
		{"multi_node_args", CheckoutOptions{Context: `{` + amd + `"multi_node_args": {}}`}, "--context: multi_node_args: is not supported: benchctl sets MAD_MULTI_NODE_RUNNER"},
		{"tools", CheckoutOptions{Context: `{` + amd + `"tools": [{"name": 7}]}`}, "--context: tools[0].name: must be the name of a tool of the checkout's scripts/common/tools.json"},
		{"timeout", CheckoutOptions{Context: `{` + amd + `"timeout": 600}`}, `--context: timeout: is not supported: each model's timeout is its models.json "timeout" (seconds; default 2h): set it there`},
		{"several problems at once", CheckoutOptions{Context: `{"gpu_vendor": "intel", "guest_os": "", "x": 1}`},
			"invalid input --context: 3 problems:\n  --context: gpu_vendor: must be \"AMD\" or \"NVIDIA\" (or \"none\", \"auto\"), got the string \"intel\"\n  --context: guest_os: must be a guest OS"},
		{"no vendor", CheckoutOptions{}, `--context: gpu_vendor: is not given, and each model's image is its Dockerfile picked by GPU vendor (docker/echo, docker/noop): give "gpu_vendor": "AMD" or "NVIDIA"`},
		{"vendor auto", CheckoutOptions{Context: `{"gpu_vendor": "auto"}`, Tags: []string{"smoke"}}, `--context: gpu_vendor: is "auto", and each model's image is its Dockerfile picked by GPU vendor (docker/noop)`},
		{"guest os that matches nothing", CheckoutOptions{Context: `{` + amd + `"guest_os": "CENTOS"}`, Tags: []string{"echo"}},
			"models.json:2: echo_infer.dockerfile: dockerfile docker/echo: no Dockerfile is for gpu_vendor AMD and guest_os CENTOS"},
		{"particular GPUs", CheckoutOptions{Context: `{` + amd + `"docker_gpus": "0,2-4,7"}`},
			`--context: docker_gpus: "0,2-4,7" picks particular GPUs, which benchctl does not take from the context: each node's container gets the first gpu.count GPUs`},
		{"GPUs that are not a list", CheckoutOptions{Context: `{` + amd + `"docker_gpus": "first"}`}, `docker_gpus: "first" is not a GPU list`},
		{"too many GPUs", CheckoutOptions{Context: `{` + amd + `"docker_gpus": "0-99999999999"}`}, `docker_gpus: "0-99999999999" names more than 1024 GPUs`},
		{"the largest index", CheckoutOptions{Context: `{` + amd + `"docker_gpus": "9223372036854775807"}`}, `picks particular GPUs, which benchctl does not take from the context`},
		{"a GPU twice", CheckoutOptions{Context: `{` + amd + `"docker_gpus": "0,1,0"}`}, `docker_gpus: "0,1,0" names GPU 0 twice`},
		{"a reserved variable", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"NODE_RANK": "3"}}`}, "--context: docker_env_vars.NODE_RANK: is set by benchctl on every node"},
		{"a bad variable name", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"1X": "3"}}`}, `--context: docker_env_vars.1X: "1X" is not an environment variable name`},
		{"an unset variable", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"X": "${NOPE}"}}`}, "--context: docker_env_vars.X: ${NOPE} is not set"},
		{"a bad build arg name", CheckoutOptions{Context: `{` + amd + `"docker_build_arg": {"A-B": "1"}}`}, `--context: docker_build_arg.A-B: "A-B" is not a build argument name`},
		{"the workspace mounted", CheckoutOptions{Context: `{` + amd + `"docker_mounts": {"/myworkspace/": "/tmp"}}`}, "--context: docker_mounts./myworkspace/: /myworkspace is where benchctl mounts the MAD checkout"},
		{"a target mounted twice", CheckoutOptions{Context: `{` + amd + `"docker_mounts": {"/data": "/a", "/data/": "/b"}}`}, "--context: docker_mounts./data/: /data is already mounted from /a"},
		{"a relative target", CheckoutOptions{Context: `{` + amd + `"docker_mounts": {"data": "/a"}}`}, `--context: docker_mounts.data: container target "data" must be an absolute path`},
		{"an empty host path", CheckoutOptions{Context: `{` + amd + `"docker_mounts": {"/data": ""}}`}, "--context: docker_mounts./data: the host path is empty"},
		{"a tag that selects nothing", CheckoutOptions{Context: `{` + amd[:len(amd)-2] + `}`, Tags: []string{"nothing"}}, "--tags: selects no model from"},
		{"a 6,000-character key", CheckoutOptions{Context: `{"` + long + `": 1}`}, "--context: " + long[:60] + "…: a key of 6000 bytes is too long (at most 4096)"},
		{"a 6,000-character variable", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"` + long + `": "1"}}`}, "--context: docker_env_vars." + long[:60] + "…: a key of 6000 bytes is too long"},
		{"a deeply nested value", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"A": ` + deep + `}}`}, "--context: line 1: nested more than 64 levels deep"},
		{"a nested value", CheckoutOptions{Context: `{` + amd + `"docker_env_vars": {"A": [[[["x"]]]]}}`}, "--context: docker_env_vars.A: must be a string, got a list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			if o.Dir == "" {
				o.Dir = madFixture
			}
			if o.Tags == nil {
				o.Tags = []string{"all"}
			}
			m, _, err := CheckoutManifest(o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, c.want)
			}
			var me *document.Error
			if m != nil || !errors.As(err, &me) || !me.InvalidInput() || exitcode.Of(err) != exitcode.Invalid {
				t.Errorf("not invalid input: %T %v", err, m)
			}
			if len(err.Error()) > 2000 {
				t.Errorf("a message of %d bytes", len(err.Error()))
			}
		})
	}
}

// Warnings name the context key they are about, as problems do.
// madengine's log error scan keys in the context become the manifest's logScan: the switch,
// error patterns that replace the defaults, benign lines added to the defaults.
func TestCheckoutLogScanKeys(t *testing.T) {
	mad, _ := filepath.Abs("../tests/fixtures/mad")
	m, _, err := CheckoutManifest(CheckoutOptions{Dir: mad, Tags: []string{"smoke"},
		Context: `{"gpu_vendor": "AMD", "log_error_patterns": ["NCCL WARN"], "log_error_benign_patterns": ["RuntimeError: expected"]}`})
	if err != nil {
		t.Fatal(err)
	}
	if l := m.LogScan; l.Disabled || strings.Join(l.Errors, "|") != "NCCL WARN" || !slices.Contains(l.Benign, "RuntimeError: expected") ||
		len(l.Benign) != len(logscan.MadengineBenign)+1 {
		t.Errorf("logScan %+v", l)
	}
	for _, off := range []string{"false", `"false"`, "0"} {
		m, _, err := CheckoutManifest(CheckoutOptions{Dir: mad, Tags: []string{"smoke"}, Context: `{"gpu_vendor": "AMD", "log_error_pattern_scan": ` + off + `}`})
		if err != nil || !m.LogScan.Disabled {
			t.Errorf("%s: %+v %v", off, m.LogScan, err)
		}
	}
}

func TestCheckoutWarningsAreLocated(t *testing.T) {
	m, warns, err := CheckoutManifest(CheckoutOptions{Dir: madFixture, Tags: []string{"smoke"}, Lookup: lookup("API_TOKEN", "tok-value"),
		Context: `{"gpu_vendor": "AMD", "docker_env_vars": {"AUTH_HEADER": "Bearer ${API_TOKEN}"}, "docker_mounts": {"/data": "/does/not/exist"}}`})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"--context: docker_mounts./data: source /does/not/exist does not exist on this machine",
		"--context: docker_env_vars.AUTH_HEADER: takes ${API_TOKEN}, whose name looks like a secret",
	}
	if len(warns) != len(want) {
		t.Fatalf("warnings %q", warns)
	}
	for i, w := range want {
		if !strings.HasPrefix(warns[i], w) {
			t.Errorf("warning %q\nwant %s", warns[i], w)
		}
	}
	if out, _ := json.Marshal(m.Redacted()); strings.Contains(string(out), "tok-value") {
		t.Errorf("redacted: %s", out)
	}
}
