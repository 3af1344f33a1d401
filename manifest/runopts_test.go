package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseRunOptions(t *testing.T) {
	ok := []struct {
		args []string
		want RunOptions
	}{
		{[]string{"--shm-size=16G", "--ipc", "host", "--network=host"}, RunOptions{ShmSize: "16G", IPC: "host", Network: "host"}},
		{[]string{"--net", "host", "-u", "1000:1000"}, RunOptions{Network: "host", User: "1000:1000"}},
		{[]string{"--cap-add=SYS_PTRACE", "--cap-add", "IPC_LOCK", "--security-opt", "seccomp=unconfined"},
			RunOptions{CapAdd: []string{"SYS_PTRACE", "IPC_LOCK"}, SecurityOpt: []string{"seccomp=unconfined"}}},
		{[]string{"--device=/dev/kfd", "--device", "/dev/dri", "--group-add", "video", "--group-add=109"},
			RunOptions{Devices: []string{"/dev/kfd", "/dev/dri"}, GroupAdd: []string{"video", "109"}}},
		{[]string{"--ulimit", "memlock=-1:-1", "--ulimit=stack=67108864"},
			RunOptions{Ulimits: map[string]Ulimit{"memlock": {-1, -1}, "stack": {67108864, 67108864}}}},
		{[]string{"-e", "NCCL_DEBUG=INFO", "--env=HSA_FORCE=1", "-eA=b c"}, RunOptions{Env: map[string]string{"NCCL_DEBUG": "INFO", "HSA_FORCE": "1", "A": "b c"}}},
		{[]string{"-v", "/data:/data:ro", "--volume=/scratch:/scratch"}, RunOptions{Volumes: []string{"/data:/data:ro", "/scratch:/scratch"}}},
		{nil, RunOptions{}},
	}
	for _, c := range ok {
		got, err := ParseRunOptions(c.args)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--privileged"}, "--privileged: is not supported: benchctl accepts --shm-size"},
		{[]string{"--rm"}, "--rm: is not supported"},
		{[]string{"--entrypoint=/bin/sh"}, "--entrypoint: is not supported"},
		{[]string{"host"}, "host: is not a flag"},
		{[]string{"--ipc"}, "--ipc: needs a value"},
		{[]string{"--shm-size", "lots"}, "--shm-size lots:"},
		{[]string{"--ipc=host", "--ipc=private"}, `is given twice, with "host" and "private"`},
		{[]string{"--security-opt", "seccomp=/etc/profile.json"}, "a seccomp profile file is not read"},
		{[]string{"--group-add", "video;rm"}, "is not a group name or id"},
		{[]string{"--ulimit", "memlock"}, "is not a ulimit (NAME=SOFT[:HARD]"},
		{[]string{"-e", "HF_TOKEN"}, "list the name under passEnv"},
		{[]string{"-e", "1X=2"}, "is not NAME=VALUE"},
	}
	for _, c := range bad {
		_, err := ParseRunOptions(c.args)
		var oe *OptionError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &oe) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

// container.extraOptions (madengine's additional_docker_run_options as one string) land in
// the container's fields, env and mounts, checked as if written there; disagreements and
// unknown flags are problems with the manifest's line.
func TestExtraOptionsInAManifest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	load := func(body string) (*Manifest, error) {
		p := filepath.Join(dir, "m.yaml")
		os.WriteFile(p, []byte("name: t\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: b, command: [x]}]\n"+body), 0o644)
		m, _, err := Load(p, Options{Lookup: func(string) (string, bool) { return "", false }})
		return m, err
	}
	m, err := load(`container:
  extraOptions: "--shm-size=16G --ipc=host --cap-add SYS_PTRACE --security-opt seccomp=unconfined --group-add video --ulimit memlock=-1 -e 'NCCL_DEBUG=INFO' -v /data:/data:ro"
`)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Container
	if c.ShmSize != 16<<30 || c.IPC != "host" || !reflect.DeepEqual(c.CapAdd, []string{"SYS_PTRACE"}) || !reflect.DeepEqual(c.SecurityOpt, []string{"seccomp=unconfined"}) ||
		!reflect.DeepEqual(c.GroupAdd, []string{"video"}) || len(c.Ulimits) != 1 || c.Ulimits[0].Soft != -1 {
		t.Fatalf("container %+v", c)
	}
	if len(m.Env) != 1 || m.Env[0].Name != "NCCL_DEBUG" || len(m.Mounts) != 1 || m.Mounts[0].Target != "/data" || !m.Mounts[0].ReadOnly {
		t.Fatalf("env %+v mounts %+v", m.Env, m.Mounts)
	}
	for body, want := range map[string]string{
		"container: {extraOptions: \"--privileged\"}\n":            "m.yaml:4: container.extraOptions: --privileged: is not supported",
		"container: {ipc: private, extraOptions: [--ipc, host]}\n": `container.extraOptions: sets ipc "host", but container.ipc is "private"`,
		"env: {A: x}\ncontainer: {extraOptions: \"-e A=y\"}\n":     `sets A="y", but env sets A="x"`,
		"container: {extraOptions: \"--cap-add NOT_A_CAP\"}\n":     `container.capAdd[0]: "NOT_A_CAP" is not a Linux capability`,
		"container: {extraOptions: \"-v myvolume:/data\"}\n":       `-v "myvolume:/data" is not a bind mount`,
		"container: {extraOptions: \"--network bridgee\"}\n":       `container.network: "bridgee" is not supported`,
		"container: {extraOptions: \"--shm-size 'unclosed\"}\n":    "unclosed single quote",
		"container: {extraOptions: {shm: 1}}\n":                    "must be a string of docker-run flags or a list of words",
	} {
		if _, err := load(body); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// A model's additional_docker_run_options are kept as metadata (job.json): the value of a
// credential-like variable in them is redacted there.
func TestRedactRunOptions(t *testing.T) {
	for in, want := range map[string]string{
		"-e HF_TOKEN=hf_abc --shm-size 1g":  "-e HF_TOKEN=*** --shm-size 1g",
		"--env=API_KEY=k -eNCCL_DEBUG=INFO": "--env=API_KEY=*** -eNCCL_DEBUG=INFO",
		"-e=MY_PASSWORD=p":                  "-e=MY_PASSWORD=***",
		"--env MINE=x":                      "--env MINE=***",
		"--ipc host":                        "--ipc host",
		"--env 'unclosed":                   "***",
	} {
		if got := redactRunOptions(in, []EnvVar{{Name: "MINE", Secret: true}}); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
