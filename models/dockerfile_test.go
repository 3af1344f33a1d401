package models

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseContextLine(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       map[string]string
		has        bool
		err        string
	}{
		{"madengine's form", "# CONTEXT {'gpu_vendor': 'AMD', 'guest_os': 'UBUNTU'}\nFROM x\n", map[string]string{"gpu_vendor": "AMD", "guest_os": "UBUNTU"}, true, ""},
		{"double quotes, no spaces, trailing comma", `#CONTEXT {"gpu_vendor":"NVIDIA",}` + "\n", map[string]string{"gpu_vendor": "NVIDIA"}, true, ""},
		{"lower case and blanks", "  #   context   {  'gpu_vendor' :  'AMD'  }  \n", map[string]string{"gpu_vendor": "AMD"}, true, ""},
		{"escaped quote", `# CONTEXT {'note': 'it\'s'}` + "\n", map[string]string{"note": "it's"}, true, ""},
		{"empty dict", "# CONTEXT {}\n", map[string]string{}, true, ""},
		{"none", "FROM x\n# a comment\n", nil, false, ""},
		{"not a dict", "# CONTEXT gpu_vendor=AMD\n", nil, true, "line 1: the CONTEXT line is not a dict"},
		{"unclosed", "FROM x\n# CONTEXT {'gpu_vendor': 'AMD'\n", nil, true, "line 2:"},
		{"a number value", "# CONTEXT {'n': 8}\n", nil, true, "expected a quoted string"},
		{"junk after", "# CONTEXT {'a': 'b'} x\n", nil, true, "unexpected"},
	} {
		got, has, err := ParseContextLine([]byte(c.text))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || has != c.has || len(got) != len(c.want) {
			t.Errorf("%s: %v %v %v", c.name, got, has, err)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", c.name, k, got[k], v)
			}
		}
	}
}

func TestResolveDockerfile(t *testing.T) {
	root := t.TempDir()
	docker := filepath.Join(root, "docker")
	os.MkdirAll(docker, 0o755)
	write := func(name, ctx string) {
		os.WriteFile(filepath.Join(docker, name), []byte(ctx+"\nFROM scratch\n"), 0o644)
	}
	write("pyt_vllm.ubuntu.amd.Dockerfile", "# CONTEXT {'gpu_vendor': 'AMD', 'guest_os': 'UBUNTU'}")
	write("pyt_vllm.ubuntu.nvidia.Dockerfile", "# CONTEXT {'gpu_vendor': 'NVIDIA', 'guest_os': 'UBUNTU'}")
	write("pyt_train.ubuntu.amd.Dockerfile", "# CONTEXT {'gpu_vendor': 'AMD', 'guest_os': 'UBUNTU'}")
	write("pyt_train.centos.amd.Dockerfile", "# CONTEXT {'gpu_vendor': 'AMD', 'guest_os': 'CENTOS'}")
	write("plain.Dockerfile", "")
	for _, c := range []struct {
		prefix, vendor, os, want, err string
	}{
		{"docker/pyt_vllm", "amd", "", "pyt_vllm.ubuntu.amd.Dockerfile", ""},
		{"docker/pyt_vllm", "NVIDIA", "", "pyt_vllm.ubuntu.nvidia.Dockerfile", ""},
		{"docker/pyt_train", "amd", "centos", "pyt_train.centos.amd.Dockerfile", ""},
		{"docker/pyt_train", "amd", "", "", "2 Dockerfiles are for gpu_vendor AMD: give guest_os"},
		{"docker/pyt_train", "nvidia", "", "", "no Dockerfile is for gpu_vendor NVIDIA (candidates: pyt_train.centos.amd.Dockerfile: gpu_vendor AMD, guest_os CENTOS; pyt_train.ubuntu.amd.Dockerfile: gpu_vendor AMD, guest_os UBUNTU)"},
		{"docker/plain", "nvidia", "", "plain.Dockerfile", ""},
		{"docker/none", "amd", "", "", "no file matches"},
	} {
		got, err := ResolveDockerfile(root, "m", c.prefix, c.vendor, c.os)
		if c.err != "" {
			var de *DockerfileError
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &de) || !de.InvalidInput() {
				t.Errorf("%s %s %s: %v, want %q", c.prefix, c.vendor, c.os, err, c.err)
			}
			continue
		}
		if err != nil || filepath.Base(got) != c.want {
			t.Errorf("%s %s %s: %s, %v; want %s", c.prefix, c.vendor, c.os, got, err, c.want)
		}
	}
}
