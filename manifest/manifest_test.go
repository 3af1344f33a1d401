package manifest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest/document"
)

func env(kv ...string) Lookup {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadGoodYAMLAndJSONAgree(t *testing.T) {
	lookup := env("SCRATCH", "/scratch/me", "HF_TOKEN", "hf_secret_value")
	y, wy, err := Load("testdata/good.yaml", Options{Lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := Load("testdata/good.json", Options{Lookup: lookup})
	if err != nil {
		t.Fatal(err)
	}
	// Everything but the file identity must be identical.
	y2, j2 := *y, *j
	y2.Path, y2.Digest, j2.Path, j2.Digest = "", "", "", ""
	if !reflect.DeepEqual(y2, j2) {
		t.Fatalf("YAML and JSON resolve differently:\n%+v\n%+v", y2, j2)
	}
	dir, _ := filepath.Abs("testdata")
	if y.Image.Dockerfile != filepath.Join(dir, "train.Dockerfile") || y.Image.Context != dir {
		t.Errorf("paths not resolved against the manifest folder: %+v", y.Image)
	}
	if got := y.Image.BuildArgs; len(got) != 2 || got[0] != (EnvVar{Name: "BASE_IMAGE", Value: "rocm/pytorch:6.4"}) || got[1].Value != "0" {
		t.Errorf("buildArgs = %+v", got)
	}
	if len(y.Mounts) != 2 || y.Mounts[1].Source != "/scratch/me/ckpt" || !y.Mounts[0].ReadOnly {
		t.Errorf("mounts not de-duplicated / expanded: %+v", y.Mounts)
	}
	wantEnv := []EnvVar{{"HF_HOME", "/data/hf", false}, {"PRICE", "$5", false}, {"THREADS", "8", false}, {"TOKEN_COPY", "hf_secret_value", true}}
	if !reflect.DeepEqual(y.Env, wantEnv) {
		t.Errorf("env = %+v", y.Env)
	}
	if y.GPU != (GPU{Vendor: "amd", Count: 8}) || y.Container.ShmSize != 16<<30 || y.Slurm.Nodes != 2 {
		t.Errorf("gpu/container/slurm: %+v %+v %+v", y.GPU, y.Container, y.Slurm)
	}
	if y.Benchmarks[0].Timeout != Duration(90*time.Minute) || y.Benchmarks[1].Timeout != Duration(DefaultTimeout) {
		t.Errorf("timeouts: %v %v", y.Benchmarks[0].Timeout, y.Benchmarks[1].Timeout)
	}
	if len(y.Container.Ulimits) != 2 || y.Container.Ulimits[0] != (Limit{"memlock", -1, -1}) {
		t.Errorf("ulimits %+v", y.Container.Ulimits)
	}
	for _, w := range wy {
		if strings.Contains(w, "HF_TOKEN") {
			t.Errorf("unexpected warning about a set secret: %s", w)
		}
	}
}

func TestRedactedNeverShowsSecrets(t *testing.T) {
	m, _, err := Load("testdata/good.yaml", Options{Lookup: env("SCRATCH", "/s", "HF_TOKEN", "hf_secret_value")})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(m.Redacted())
	if strings.Contains(string(out), "hf_secret_value") {
		t.Fatalf("secret in redacted output: %s", out)
	}
	if !strings.Contains(string(out), `"value":"***"`) {
		t.Fatalf("redaction marker missing: %s", out)
	}
	if m.Env[3].Value != "hf_secret_value" {
		t.Fatal("Redacted modified the original")
	}
}

// writeManifest writes a manifest next to a Dockerfile and returns its path.
func writeManifest(t *testing.T, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const okHead = "name: t\nimage: {dockerfile: Dockerfile}\n"
const okBench = "benchmarks: [{name: b, command: [x]}]\n"

func TestInvalidManifests(t *testing.T) {
	cases := []struct {
		name, file, body string
		want             []string // "line: path: fragment"
	}{
		{"unknown field", "m.yaml", okHead + okBench + "gpus: {vendor: amd}\n", []string{`4: gpus: unknown field, did you mean "gpu"?`}},
		{"log scan blank pattern", "m.yaml", okHead + okBench + "logScan: {errors: [\"NCCL WARN\", \" \"]}\n", []string{`4: logScan.errors[1]: " " is not a pattern`}},
		{"log scan no errors", "m.yaml", okHead + okBench + "logScan: {errors: []}\n", []string{"4: logScan.errors: is empty: to turn the scan off, write logScan: {enabled: false}"}},
		{"log scan not a bool", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], logScan: maybe}]\n", []string{"3: benchmarks[0].logScan:"}},
		{"unknown nested", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], timout: 1h}]\n", []string{`3: benchmarks[0].timout: unknown field, did you mean "timeout"?`}},
		{"wrong type", "m.yaml", okHead + okBench + "passEnv: NCCL_*\n", []string{"4: passEnv: must be a list"}},
		{"duplicate key yaml", "m.yaml", okHead + okBench + "env: {A: 1}\nenv: {B: 2}\n", []string{`5: duplicate key "env" (first defined at line 4)`}},
		{"duplicate key json", "m.json", "{\n\"name\": \"t\",\n\"name\": \"u\"\n}\n", []string{`3: duplicate key "name" (first defined at line 2)`}},
		{"json syntax", "m.json", "{\n\"name\": \"t\",\n\"image\": {\n}}\n,\n", []string{"5: unexpected content after the end"}},
		{"json unclosed", "m.json", "{\n\"name\": \"t\",\n", []string{"not closed"}},
		{"number in a command", "m.yaml", okHead + "benchmarks: [{name: a, command: [sleep, 10]}]\n", []string{`3: benchmarks[0].command[1]: must be a string, got the number 10 (quote it: "10")`}},
		{"json NUL", "m.json", "{\n\"name\": \"t\\u0000x\"\n}\n", []string{"2: a value contains a NUL byte"}},
		{"json not UTF-8", "m.json", "{\n\"name\": \"t\xff\"\n}\n", []string{"2: the file is not UTF-8 text"}},
		{"yaml NUL", "m.yaml", "name: \"t\\0x\"\n", []string{"1: a value contains a NUL byte"}},
		{"json type", "m.json", "{\"name\": \"t\",\n \"image\": {\"dockerfile\": \"Dockerfile\"},\n \"benchmarks\": [{\"name\": \"b\", \"command\": [\"x\"]}],\n \"gpu\": {\"count\": \"many\"}}\n", []string{`4: gpu.count: must be a positive number of GPUs per node (at most 1024) or "all", got the string "many"`}},
		{"bad enum", "m.yaml", okHead + okBench + "gpu: {vendor: amdd}\n", []string{`4: gpu.vendor: "amdd" is not a GPU vendor, did you mean "amd"? (allowed: amd, nvidia, none, auto)`}},
		{"bad duration", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], timeout: 2hours}]\n", []string{`3: benchmarks[0].timeout: "2hours" is not a duration`}},
		{"bare number duration", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], timeout: 60}]\n", []string{`3: benchmarks[0].timeout: must be a duration`}},
		{"unknown launcher", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], launcher: openmpi}]\n", []string{`3: benchmarks[0].launcher: "openmpi" is not a launcher; allowed: torchrun, torchtitan, deepspeed, megatron-lm, primus, vllm, sglang, sglang-disagg, slurm_multi, mpirun, mpiexec`}},
		{"ranks per node of 0", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], launcher: mpirun, ranksPerNode: 0}]\n", []string{`3: benchmarks[0].ranksPerNode: 0 ranks per node: give 1 to 1024`}},
		{"ranks per node of two billion", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], launcher: mpiexec, ranksPerNode: 2000000000}]\n", []string{`3: benchmarks[0].ranksPerNode: 2000000000 ranks per node: give 1 to 1024`}},
		{"ranks per node without MPI", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], launcher: torchrun, ranksPerNode: 2}]\n", []string{`3: benchmarks[0].ranksPerNode: is for the MPI launchers (launcher: mpirun or mpiexec); "torchrun"'s ranks per node are its GPUs`}},
		{"manifest's ranks per node without MPI", "m.yaml", okHead + okBench + "ranksPerNode: 2\n", []string{`4: ranksPerNode: is for the MPI launchers (launcher: mpirun or mpiexec), and no benchmark has one`}},
		{"ranks per node not a number", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], launcher: mpirun, ranksPerNode: two}]\n", []string{`3: benchmarks[0].ranksPerNode:`}},
		{"MPI on a bridge network", "m.yaml", okHead + "container: {network: bridge}\nbenchmarks: [{name: b, command: [x], launcher: mpirun}]\n", []string{`container.network: bridge: benchmark b's launcher mpirun needs the nodes' network (host)`}},
		{"launcher spelt otherwise", "m.yaml", okHead + okBench + "launcher: TorchRun\n", []string{`4: launcher: "TorchRun" is not a launcher; allowed: torchrun,`}},
		{"megatron", "m.yaml", okHead + okBench + "launcher: megatron\n", []string{`4: launcher: "megatron" is not a launcher (did you mean megatron-lm?); allowed:`}},
		{"slurm_multi", "m.yaml", okHead + "benchmarks:\n  - name: b\n    command: [x]\n    launcher: slurm_multi\n", []string{"6: benchmarks[0].launcher: slurm_multi is madengine's escape hatch"}},
		{"launcher not a string", "m.yaml", okHead + okBench + "launcher: [torchrun]\n", []string{"4: launcher: must be a string"}},
		{"bad onFailure", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], onFailure: stop}]\n", []string{`3: benchmarks[0].onFailure: "stop" is not a failure policy: use "abort"`}},
		{"heartbeat too short", "m.yaml", okHead + okBench + "job: {heartbeat: 10ms}\n", []string{`4: job.heartbeat: "10ms" is out of range: give 100ms to 10m0s`}},
		{"heartbeat too long", "m.yaml", okHead + okBench + "job: {heartbeat: 2h}\n", []string{`4: job.heartbeat: "2h0m0s" is out of range`}},
		{"heartbeat not a duration", "m.yaml", okHead + okBench + "job: {heartbeat: 5}\n", []string{`4: job.heartbeat: must be a duration`}},
		{"telemetry interval too short", "m.yaml", okHead + okBench + "telemetry: {interval: 10ms}\n", []string{`4: telemetry.interval: "10ms" is out of range: give 100ms to 1h0m0s (or off)`}},
		{"telemetry interval a number", "m.yaml", okHead + okBench + "telemetry: {interval: 5}\n", []string{`4: telemetry.interval: must be a duration`}},
		{"telemetry unknown field", "m.yaml", okHead + okBench + "telemetry: {every: 1s}\n", []string{`4: telemetry.every: is not a field of telemetry (it has interval only)`}},
		{"telemetry on", "m.yaml", okHead + okBench + "telemetry: on\n", []string{`4: telemetry: must be off or a mapping such as {interval: 1s}, got the string "on"`}},
		{"telemetry a list", "m.json", "{\"name\": \"t\",\n \"image\": {\"dockerfile\": \"Dockerfile\"},\n \"benchmarks\": [{\"name\": \"b\", \"command\": [\"x\"]}],\n \"telemetry\": [\"1s\"]}\n", []string{`4: telemetry: must be off or a mapping`}},
		{"unknown job field", "m.yaml", okHead + okBench + "job: {heartbeats: 5s}\n", []string{`4: job.heartbeats: unknown field, did you mean "heartbeat"?`}},
		{"unknown engine", "m.yaml", okHead + okBench + "engine: Podman\n", []string{`4: engine: "Podman" is not a container engine benchctl knows (allowed: docker, podman)`}},
		{"bad distribution", "m.yaml", okHead + okBench + "distribution: nfs\n", []string{`4: distribution: "nfs" is not a way to distribute images (allowed: auto, cache, stream, registry)`}},
		{"registry distribution of a built image", "m.yaml", okHead + okBench + "distribution: registry\n", []string{`distribution: registry has every node pull its image, but b builds `, "benchctl build --push"}},
		{"bad pull policy", "m.yaml", "name: t\nimage: {ref: 'busybox:1', pull: sometimes}\n" + okBench, []string{`2: image.pull: "sometimes" is not a pull policy (allowed: missing, always, never)`}},
		{"pull secret not a variable", "m.yaml", "name: t\nimage: {ref: 'reg:5000/a:1', pullSecret: 'REG-CRED'}\n" + okBench, []string{`2: image.pullSecret: "REG-CRED" is not a variable name`}},
		{"pull secret of benchctl's", "m.yaml", "name: t\nimage: {ref: 'reg:5000/a:1', pullSecret: BENCHCTL_JOB_SECRET}\n" + okBench, []string{`2: image.pullSecret: "BENCHCTL_JOB_SECRET" is not a variable name`}},
		{"pull of a built image", "m.yaml", "name: t\nimage: {dockerfile: Dockerfile, pull: always}\n" + okBench, []string{`2: image.pull: applies only to an existing image (image.ref)`}},
		{"bad size", "m.yaml", okHead + okBench + "container: {shmSize: 16 gigs}\n", []string{`4: container.shmSize: "16 gigs" is not a size`}},
		{"bad name", "m.yaml", "name: My_Bench\nimage: {dockerfile: Dockerfile}\n" + okBench, []string{`1: name: "My_Bench" is not a valid name`}},
		{"name no image can have", "m.yaml", "name: llama..8b-\nimage: {dockerfile: Dockerfile}\n" + okBench, []string{`1: name: "llama..8b-" cannot name an image (benchctl/<name>)`, `e.g. "llama.8b"`}},
		{"missing name", "m.yaml", "image: {dockerfile: Dockerfile}\n" + okBench, []string{"1: name: is required"}},
		{"long name", "m.yaml", "name: " + strings.Repeat("a", 64) + "\nimage: {dockerfile: Dockerfile}\n" + okBench, []string{"1: name: "}},
		{"conflicting mounts", "m.yaml", okHead + okBench + "mounts:\n  - /a:/data\n  - {source: /b, target: /data/}\n", []string{"6: mounts[1]: target /data is already mounted from /a (mounts[0], line 5); this one mounts /b"}},
		{"ro rw conflict", "m.yaml", okHead + okBench + "mounts: [/a:/data:ro, /a:/data]\n", []string{"4: mounts[1]: target /data is mounted twice from /a, once read-only"}},
		{"empty source", "m.yaml", okHead + okBench + "mounts: ['${BCTL_TEST_UNSET_X:-}:/data', {source: /a, target: '${BCTL_TEST_UNSET_Y:-}'}]\n", []string{`4: mounts[0]: source "${BCTL_TEST_UNSET_X:-}" expands to an empty path`, `4: mounts[1]: target "${BCTL_TEST_UNSET_Y:-}" expands to an empty path`}},
		{"default with a colon in a string mount", "m.yaml", okHead + okBench + "mounts: ['${BCTL_TEST_UNSET_X:-/scratch}/ckpt:/ckpt:rw', '/a:${BCTL_TEST_UNSET_Y:-data}']\n", []string{`4: mounts[1]: container target "data" must be an absolute path`}},
		{"relative target", "m.yaml", okHead + okBench + "mounts: [/a:data]\n", []string{`4: mounts[0]: container target "data" must be an absolute path`}},
		{"malformed mount", "m.yaml", okHead + okBench + "mounts: [/a, /a:/b:rx, 7]\n", []string{`4: mounts[0]: "/a" is not a mount`, `4: mounts[1]: mount option "rx" is not supported`, `4: mounts[2]: must be "SOURCE:TARGET[:ro]"`}},
		{"empty command", "m.yaml", okHead + "benchmarks: [{name: b, command: []}]\n", []string{"3: benchmarks[0].command: is empty"}},
		{"missing command", "m.yaml", okHead + "benchmarks: [{name: b}]\n", []string{"3: benchmarks[0].command: is required"}},
		{"shell string command", "m.yaml", okHead + "benchmarks: [{name: b, command: \"bash run.sh\"}]\n", []string{`3: benchmarks[0].command: must be a list (exec form), got the string "bash run.sh": write ["bash", "run.sh"]`}},
		{"duplicate benchmark", "m.yaml", okHead + "benchmarks:\n  - {name: b, command: [x]}\n  - {name: b, command: [y]}\n", []string{`5: benchmarks[1].name: "b" is already the name of benchmarks[0]`}},
		{"no benchmarks", "m.yaml", okHead, []string{"benchmarks: is required"}},
		{"unset var", "m.yaml", okHead + okBench + "env: {A: \"${NOT_SET_ANYWHERE}\"}\n", []string{"4: env.A: ${NOT_SET_ANYWHERE} is not set (set it, or give a default: ${NOT_SET_ANYWHERE:-value})"}},
		{"unterminated var", "m.yaml", okHead + okBench + "env: {A: \"${X\"}\n", []string{"4: env.A: unterminated ${"}},
		{"missing dockerfile", "m.yaml", "name: t\nimage: {dockerfile: nope/Dockerfile}\n" + okBench, []string{"2: image.dockerfile: ", "nope/Dockerfile does not exist"}},
		{"missing context", "m.yaml", "name: t\nimage: {dockerfile: Dockerfile, context: ctx}\n" + okBench, []string{"2: image.context: ", "ctx does not exist"}},
		{"missing catalog", "m.yaml", okHead + "models: {catalog: ../MAD/models.json, tags: [vllm]}\n", []string{"3: models.catalog: ", "MAD/models.json does not exist"}},
		{"both dockerfile and ref", "m.yaml", "name: t\nimage: {dockerfile: Dockerfile, ref: busybox}\n" + okBench, []string{"2: image: give either dockerfile"}},
		{"neither dockerfile nor ref", "m.yaml", "name: t\nimage: {tag: x}\n" + okBench, []string{"2: image: needs dockerfile"}},
		{"missing image", "m.yaml", "name: t\n" + okBench, []string{"1: image: is required"}},
		{"bad tag", "m.yaml", "name: t\nimage: {dockerfile: Dockerfile, tag: \"Bad:Tag:x\"}\n" + okBench, []string{"2: image.tag: "}},
		{"secret in build arg", "m.yaml", "name: t\nimage: {dockerfile: Dockerfile, buildArgs: {T: \"${HF_TOKEN}\"}}\nsecrets: [HF_TOKEN]\n" + okBench, []string{"2: image.buildArgs.T: uses the secret ${HF_TOKEN}"}},
		{"reserved env", "m.yaml", okHead + okBench + "env: {NODE_RANK: \"1\"}\n", []string{"4: env.NODE_RANK: is set by benchctl"}},
		{"reserved benchctl env", "m.yaml", okHead + okBench + "env: {BENCHCTL_JOB_ID: mine}\n", []string{"4: env.BENCHCTL_JOB_ID: is set by benchctl"}},
		{"bad results path", "m.yaml", okHead + "benchmarks: [{name: b, command: [x], results: ../x.csv}]\n", []string{`3: benchmarks[0].results: "../x.csv" must be a file name relative`}},
		{"bad ulimit", "m.yaml", okHead + okBench + "container: {ulimits: {memlok: 1}}\n", []string{"4: container.ulimits.memlok: is not a ulimit"}},
		{"bad slurm time", "m.yaml", okHead + okBench + "slurm: {time: 2h}\n", []string{`4: slurm.time: "2h" is not a Slurm time limit`}},
		{"bad kubernetes namespace", "m.yaml", okHead + okBench + "kubernetes: {namespace: Bench_NS}\n", []string{`4: kubernetes.namespace: "Bench_NS" is not a namespace name`}},
		{"bad kubernetes toleration", "m.yaml", okHead + okBench + "kubernetes:\n  tolerations:\n    - {key: gpu, operator: Maybe}\n", []string{`6: kubernetes.tolerations[0].operator: "Maybe" is not a toleration operator (Equal or Exists)`}},
		{"kubernetes claim and host path", "m.yaml", okHead + okBench + "kubernetes: {resultsClaim: r, resultsHostPath: /data/r, cpu: lots}\n", []string{"4: kubernetes.resultsHostPath: give resultsClaim or resultsHostPath, not both", `4: kubernetes.cpu: "lots" is not a Kubernetes quantity`}},
		{"secret in the kubernetes block", "m.yaml", okHead + okBench + "secrets: [TOK]\nkubernetes: {namespace: \"${TOK}\"}\n", []string{"5: kubernetes.namespace: uses the secret ${TOK}"}},
		{"benchctl's variable in the kubernetes block", "m.yaml", okHead + okBench + "kubernetes: {benchctlImage: \"${BENCHCTL_IMAGE:-x}\"}\n", []string{"4: kubernetes.benchctlImage: ${BENCHCTL_IMAGE}: benchctl's own variables"}},
		{"unknown kubernetes field", "m.yaml", okHead + okBench + "kubernetes: {namspace: b}\n", []string{`4: kubernetes.namspace: unknown field, did you mean "namespace"?`}},
		{"injection in partition", "m.yaml", okHead + okBench + "slurm: {partition: \"gpu; rm -rf /\"}\n", []string{"4: slurm.partition: "}},
		{"bad gpu count", "m.yaml", okHead + okBench + "gpu: {count: -2}\n", []string{"4: gpu.count: must be a positive number"}},
		{"models without selection", "m.yaml", okHead + "models: {catalog: models.json}\n", []string{"3: models: select models with tags"}},
		{"version", "m.yaml", "version: 2\n" + okHead + okBench, []string{"1: version: unsupported manifest version 2"}},
		{"not a mapping", "m.yaml", "- a\n- b\n", []string{"1: a manifest must be a mapping"}},
		{"empty", "m.yaml", "", []string{"the document is empty"}},
		{"yaml syntax", "m.yaml", "name: t\n  image: [\n", []string{"invalid YAML"}},
		{"two documents", "m.yaml", okHead + okBench + "---\nname: u\n", []string{"more than one YAML document"}},
		{"bad extension", "m.toml", "name = 't'\n", []string{"unknown manifest extension"}},
		{"env null", "m.yaml", okHead + okBench + "env: {A: }\n", []string{"4: env.A: has no value"}},
		{"passEnv bad glob", "m.yaml", okHead + okBench + "passEnv: [\"A[\", \"B C\"]\n", []string{"4: passEnv[0]: ", "4: passEnv[1]: "}},
		{"bad capability", "m.yaml", okHead + okBench + "container: {capAdd: [SYS_PTRAC]}\n", []string{`4: container.capAdd[0]: "SYS_PTRAC" is not a Linux capability`}},
		{"bad device", "m.yaml", okHead + okBench + "container: {devices: [kfd]}\n", []string{`4: container.devices[0]: "kfd" is not a device`}},
		{"device outside /dev", "m.yaml", okHead + okBench + "container: {devices: [\"/dev/../etc/shadow:/x\", /dev/]}\n", []string{`4: container.devices[0]: "/dev/../etc/shadow:/x" is not a device`, `4: container.devices[1]: "/dev/" is not a device`}},
		{"many at once", "m.yaml", "name: T\nimage: {dockerfile: Dockerfile}\ngpu: {vendor: x}\nbenchmarks: [{name: b}]\n", []string{"1: name:", "3: gpu.vendor:", "4: benchmarks[0].command:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeManifest(t, c.file, c.body)
			_, _, err := Load(p, Options{Lookup: env()})
			var me *document.Error
			if !errors.As(err, &me) {
				t.Fatalf("want *document.Error, got %v", err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, p+":"+w) && !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q:\n%s", w, msg)
				}
				if lineSep := strings.Index(w, ": "); lineSep > 0 && isDigits(w[:lineSep]) && !strings.Contains(msg, p+":"+w) {
					t.Errorf("error does not locate %q as %s:%s", w, p, w)
				}
			}
			for _, pr := range me.Problems {
				if pr.File == "" || pr.Msg == "" {
					t.Errorf("problem without file or message: %+v", pr)
				}
			}
		})
	}
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func TestMissingFile(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), Options{})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("got %v", err)
	}
}

func TestExpand(t *testing.T) {
	lookup := env("A", "1", "EMPTY", "", "S", "sec")
	secret := func(n string) bool { return n == "S" }
	cases := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${A}", "1", ""},
		{"x${A}y${A}", "x1y1", ""},
		{"${B:-def}", "def", ""},
		{"${EMPTY:-def}", "def", ""},
		{"${EMPTY-def}", "", ""},
		{"${B-def}", "def", ""},
		{"$$A", "$A", ""},
		{"$$${A}", "$1", ""},
		{"$A", "$A", ""},
		{"cost $5", "cost $5", ""},
		{"trailing $", "trailing $", ""},
		{"${B}", "", "${B} is not set"},
		{"${B:?give B}", "", "${B}: give B"},
		{"${1A}", "", "is not a variable name"},
		{"${A", "", "unterminated"},
		{"${A:-${B}}", "", "nested"},
		{"${S}", "sec", ""},
	}
	for _, c := range cases {
		got, _, err := Expand(c.in, lookup, secret)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Expand(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	_, secrets, _ := Expand("a${S}b", lookup, secret)
	if len(secrets) != 1 || secrets[0] != "S" {
		t.Errorf("secrets used = %v", secrets)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"16g": 16 << 30, "512m": 512 << 20, "1024": 1024, "1.5G": 3 << 29, "64MiB": 64 << 20, "2k": 2048} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "g", "-1", "16x", "1e9"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) succeeded", in)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 29: "1.5 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// A value of the wrong type gets one message, not a second one about the value being absent.
func TestWrongTypeIsReportedOnce(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("name: 123\nversion: \"1\"\nimage: Dockerfile\nslurm: {nodes: 0x10}\nbenchmarks: [{name: a, command: [\"true\"], tags: [1]}]\n"), 0o644)
	_, _, err := Load(p, Options{})
	var me *document.Error
	if !errors.As(err, &me) {
		t.Fatalf("%v", err)
	}
	seen := map[string]int{}
	for _, pr := range me.Problems {
		seen[pr.Path]++
	}
	for _, path := range []string{"name", "version", "image", "slurm.nodes", "benchmarks[0].tags[0]"} {
		if seen[path] != 1 {
			t.Errorf("%s: %d problems, want 1 (%v)", path, seen[path], err)
		}
	}
}

func TestExtensionKeysHoldAnchors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("x-env: &env {HF_HOME: /data/hf}\nname: t\nimage: {dockerfile: Dockerfile}\nenv: *env\nbenchmarks: [{name: a, command: [x], env: *env}]\n"), 0o644)
	m, _, err := Load(p, Options{})
	if err != nil || len(m.Env) != 1 || m.Env[0].Name != "HF_HOME" || len(m.Benchmarks[0].Env) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	os.WriteFile(p, []byte("name: t\nimage: {dockerfile: Dockerfile, x-note: 1}\nbenchmarks: [{name: a, command: [x]}]\n"), 0o644)
	if _, _, err := Load(p, Options{}); err == nil || !strings.Contains(err.Error(), "image.x-note: unknown field") {
		t.Fatalf("x- below the top level: %v", err)
	}
}

// A stored field that takes a variable named like a credential, not listed under secrets:
// loaded, with a warning at its line that says where the value ends up and what to do.
func TestSecretLikeVariableInAStoredFieldWarns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("name: x\nimage:\n  dockerfile: Dockerfile\n  buildArgs:\n    VERSION: \"${VERSION:-1}\"\n    TOKEN: \"${HF_TOKEN}\"\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	m, warns, err := Load(p, Options{Lookup: env("HF_TOKEN", "hf_abc")})
	if err != nil || m == nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "m.yaml:6") || !strings.Contains(warns[0], "image.buildArgs.TOKEN") ||
		!strings.Contains(warns[0], "looks like a secret") || !strings.Contains(warns[0], "list HF_TOKEN under secrets") || strings.Contains(warns[0], "hf_abc") {
		t.Fatalf("warnings %q", warns)
	}
}

func TestSecretLikeNames(t *testing.T) {
	for name, want := range map[string]bool{
		"HF_TOKEN": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "DB_PASSWORD": true, "DJANGO_SECRET_KEY": true,
		"OPENAI_API_KEY": true, "hf_token": true, "AUTH": true, "WANDB_APIKEY": true, "CLIENT_SECRET": true,
		"PASS_K": false, "NUM_PASS": false, "MAX_TOKEN": false, "TOKEN_LEN": false, "HF_TOKEN_PATH": false, "AWS_ACCESS_KEY_ID": false,
		"TOKENIZERS_PARALLELISM": false, "TOKENIZER": false, "AUTHOR": false, "OAUTH_URL": false, "KEY_PATH": false,
		"HF_HUB_ENABLE_HF_TRANSFER": false, "MAX_TOKENS": false, "SSH_KEY_DIR": false, "VERSION": false,
	} {
		if got := CredentialLike(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

func TestOnFailureAndHeartbeat(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.yaml")
	body := okHead + "job: {heartbeat: 2s}\nbenchmarks:\n  - {name: a, command: [x]}\n  - {name: b, command: [x], onFailure: continue}\n  - {name: c, command: [x], onFailure: abort}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _, err := Load(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(m.Job.Heartbeat) != 2*time.Second {
		t.Errorf("heartbeat %v", m.Job.Heartbeat)
	}
	for _, c := range []struct {
		bench      int
		world      int
		wantAborts bool
	}{{0, 1, false}, {0, 2, true}, {1, 4, false}, {1, 1, false}, {2, 1, true}, {2, 4, true}} {
		if got := m.Benchmarks[c.bench].Aborts(c.world); got != c.wantAborts {
			t.Errorf("%s on %d nodes: aborts %v, want %v", m.Benchmarks[c.bench].Name, c.world, got, c.wantAborts)
		}
	}
}

func TestTelemetryForms(t *testing.T) {
	for _, c := range []struct {
		body string
		want time.Duration
	}{
		{"", DefaultTelemetryInterval},
		{"telemetry:\n", DefaultTelemetryInterval},
		{"telemetry: {interval: 100ms}\n", 100 * time.Millisecond},
		{"telemetry: {interval: 1h}\n", time.Hour},
		{"telemetry: off\n", 0},
		{"telemetry: false\n", 0},
		{"telemetry: {interval: off}\n", 0},
	} {
		m, _, err := Load(writeManifest(t, "m.yaml", okHead+okBench+c.body), Options{Lookup: env()})
		if err != nil {
			t.Fatalf("%q: %v", c.body, err)
		}
		if got := m.Telemetry.Every(); got != c.want {
			t.Errorf("%q: sampling every %v, want %v", c.body, got, c.want)
		}
	}
}

// engine: names the container engine; without it the manifest asks for none.
func TestEngine(t *testing.T) {
	for _, tt := range []struct{ body, want string }{{"", ""}, {"engine: docker\n", EngineDocker}, {"engine: podman\n", EnginePodman}} {
		m, _, err := Parse("m.yaml", "/x/m.yaml", []byte("name: t\nimage: {ref: busybox}\n"+okBench+tt.body), Options{})
		if err != nil {
			t.Fatalf("%q: %v", tt.body, err)
		}
		if m.Engine != tt.want {
			t.Errorf("%q: Engine = %q, want %q", tt.body, m.Engine, tt.want)
		}
	}
}
