package runner

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/manifest"
)

func TestBuildSpecEnvPrecedence(t *testing.T) {
	m := &manifest.Manifest{
		Name:      "t",
		PassEnv:   []string{"NCCL_*", "SHARED"},
		Secrets:   []string{"HF_TOKEN"},
		Env:       []manifest.EnvVar{{Name: "SHARED", Value: "from-manifest"}, {Name: "HF_HOME", Value: "/data/hf"}},
		Container: manifest.Container{Network: "host", IPC: "host"},
		Mounts:    []manifest.Mount{{Source: "/data", Target: "/data", ReadOnly: true}},
	}
	b := manifest.Benchmark{Name: "train", Command: []string{"python3", "train.py"}, Timeout: manifest.Duration(time.Hour),
		Env: []manifest.EnvVar{{Name: "HF_HOME", Value: "/bench/hf"}}}
	n := Node{JobID: "9", Rank: 1, World: 2, Host: "n2", MasterAddr: "n1", MasterPort: 29500}
	environ := []string{"NCCL_DEBUG=INFO", "SHARED=from-host", "HF_TOKEN=hf_secret", "UNRELATED=x", "NODE_RANK=7"}
	s := BuildSpec(m, b, n, "img:1", "k", "/shared/results/train", GPUAccess{Vendor: "none"}, environ)
	got := map[string]manifest.EnvVar{}
	for _, e := range s.Env {
		got[e.Name] = e
	}
	for k, want := range map[string]string{
		"NCCL_DEBUG": "INFO",          // passEnv glob
		"SHARED":     "from-manifest", // manifest over pass-through
		"HF_HOME":    "/bench/hf",     // benchmark over manifest
		"NODE_RANK":  "1",             // derived over the host's
		"NNODES":     "2", "WORLD_SIZE": "2", "MASTER_ADDR": "n1", "MASTER_PORT": "29500",
		"BENCHCTL_OUTPUT_DIR": OutputDir,
		"HF_TOKEN":            "hf_secret",
	} {
		if got[k].Value != want {
			t.Errorf("%s = %q, want %q", k, got[k].Value, want)
		}
	}
	if _, ok := got["UNRELATED"]; ok {
		t.Error("a host variable not in passEnv leaked into the container")
	}
	if !got["HF_TOKEN"].Secret {
		t.Error("the secret is not marked secret")
	}
	if s.Name != "benchctl-9-0-r1-train" || s.Labels[LabelRank] != "1" || s.Labels[LabelJob] != "9" {
		t.Errorf("name %q labels %v", s.Name, s.Labels)
	}
	if last := s.Mounts[len(s.Mounts)-1]; last.Target != OutputDir || last.Source != "/shared/results/train" {
		t.Errorf("results mount %+v", last)
	}
	cfg, hc := configOf(s)
	if cfg.Entrypoint[0] != "python3" || cfg.Cmd[0] != "train.py" || string(hc.NetworkMode) != "host" || len(hc.Mounts) != 2 {
		t.Errorf("config %+v %+v", cfg, hc)
	}
	run := s.DockerRun()
	if strings.Contains(run, "hf_secret") || !strings.Contains(run, "HF_TOKEN=***") {
		t.Errorf("docker run line shows the secret or lacks ***: %s", run)
	}
	if !strings.Contains(run, "-v /data:/data:ro") || !strings.Contains(run, "--entrypoint python3 img:1 train.py") {
		t.Errorf("docker run line: %s", run)
	}
}

func TestContainerNameIsSafe(t *testing.T) {
	if got := ContainerName(Node{JobID: "local-2026/x", Rank: 0}, "a b"); got != "benchctl-local-2026_x-0-r0-a_b" {
		t.Errorf("got %q", got)
	}
}

// Every word a POSIX shell would not read back as itself is quoted, so that the dry-run line
// pasted into a shell runs the same argv; words it would read back stay bare, so the common
// line stays readable.
func TestShellQuote(t *testing.T) {
	long := strings.Repeat("a*b'c $d", 750) // 6,000 characters
	type qc struct{ in, want string }
	cases := []qc{
		{"plain", "plain"},
		{"/data/x-1_2.3:ro", "/data/x-1_2.3:ro"},
		{"NAME=v,w@x%y+z", "NAME=v,w@x%y+z"},
		{"", "''"},
		{" ", "' '"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$HOME", "'$HOME'"},
		{"=ls", "'=ls'"},
		{"~", "'~'"},
		{"~/x", "'~/x'"},
		{"a~b", "'a~b'"},
		{"é", "'é'"},
		{long, "'" + strings.ReplaceAll(long, "'", `'\''`) + "'"},
	}
	// Each character a shell treats specially, alone and inside a word.
	for _, c := range []string{"*", "?", "[", "]", "$", "`", `\`, `"`, ";", "&", "|", "<", ">", "(", ")", "{", "}", "#", "!", "^", "\t", "\n", "\r"} {
		cases = append(cases, qc{c, "'" + c + "'"}, qc{"x" + c + "y", "'x" + c + "y'"})
	}
	for _, c := range cases {
		if got := shellQuote(c.in); got != c.want {
			t.Errorf("shellQuote(%.40q) = %.60s, want %.60s", c.in, got, c.want)
		}
	}
	// What a shell makes of the quoted words is the words.
	words := make([]string, len(cases))
	quoted := make([]string, len(cases))
	for i, c := range cases {
		words[i], quoted[i] = c.in, shellQuote(c.in)
	}
	ran := false
	for _, sh := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(sh); err != nil {
			continue
		}
		ran = true
		out, err := exec.Command(sh, "-c", `printf '%s\0' `+strings.Join(quoted, " ")).Output()
		if err != nil {
			t.Fatalf("%s: %v", sh, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(got) != len(words) {
			t.Errorf("%s reads %d words back, not %d", sh, len(got), len(words))
			continue
		}
		for i := range words {
			if got[i] != words[i] {
				t.Errorf("%s reads %.40q back as %.40q", sh, words[i], got[i])
			}
		}
	}
	if !ran {
		t.Log("no sh or bash: the quoted words were not read back by a shell")
	}
}

// The dry-run docker run line quotes what a shell would glob.
func TestDockerRunQuotesGlobs(t *testing.T) {
	m := &manifest.Manifest{Name: "t", Container: manifest.Container{Network: "host", IPC: "host"}}
	b := manifest.Benchmark{Name: "b", Command: []string{"sh", "-c", "ls *.csv", "*", "[ab]"},
		Env: []manifest.EnvVar{{Name: "PAT", Value: "/data/*.bin"}}}
	s := BuildSpec(m, b, Node{JobID: "9", World: 1, Host: "n1", MasterAddr: "n1"}, "img:1", "k", "/r", GPUAccess{Vendor: "none"}, nil)
	run := s.DockerRun()
	if !strings.Contains(run, "-e 'PAT=/data/*.bin'") || !strings.HasSuffix(run, "--entrypoint sh img:1 -c 'ls *.csv' '*' '[ab]'") {
		t.Errorf("docker run line: %s", run)
	}
}

func TestSelectBenchmarksInManifestOrderOnce(t *testing.T) {
	m := &manifest.Manifest{Name: "m", Benchmarks: []manifest.Benchmark{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	got, err := SelectBenchmarks(m, []string{"c", "a", "c"})
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := SelectBenchmarks(m, []string{"z"}); err == nil || !strings.Contains(err.Error(), `"z" is not a benchmark of m (it has: a, b, c)`) {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestMountFlag(t *testing.T) {
	for _, c := range []struct {
		m    manifest.Mount
		want string
	}{
		{manifest.Mount{Source: "/data", Target: "/data", ReadOnly: true}, "-v /data:/data:ro"},
		{manifest.Mount{Source: "/tmp/a:b", Target: "/data:ro"}, "--mount type=bind,source=/tmp/a:b,target=/data:ro"},
		{manifest.Mount{Source: "/x,y", Target: "/z", ReadOnly: true}, `--mount type=bind,"source=/x,y",target=/z,readonly`},
	} {
		if got := strings.Join(mountFlag(c.m), " "); got != c.want {
			t.Errorf("%+v: %s, want %s", c.m, got, c.want)
		}
	}
}

// The barrier's key and benchctl's other host variables never reach a container.
func TestPassEnvNeverPassesBenchctlVariables(t *testing.T) {
	// Load refuses BENCHCTL_* under secrets; a manifest built by other means must not pass
	// the job secret in either.
	m := &manifest.Manifest{Name: "t", PassEnv: []string{"*"}, Secrets: []string{"BENCHCTL_JOB_SECRET"}}
	b := manifest.Benchmark{Name: "a", Command: []string{"x"}}
	environ := []string{"BENCHCTL_JOB_SECRET=0123456789abcdef-TOPSECRET", "BENCHCTL_SHARED_DIR=/s", "OTHER=1"}
	s := BuildSpec(m, b, Node{JobID: "1", World: 1}, "img", "k", "/r", GPUAccess{Vendor: "none"}, environ)
	for _, e := range s.Env {
		if e.Name == "BENCHCTL_JOB_SECRET" || e.Name == "BENCHCTL_SHARED_DIR" {
			t.Errorf("%s reached the container", e.Name)
		}
	}
	if run := s.DockerRun(); strings.Contains(run, "TOPSECRET") || !strings.Contains(run, "OTHER=1") {
		t.Errorf("docker run line: %s", run)
	}
}
