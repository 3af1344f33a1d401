package testbed

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// K8s is the testbed's Kubernetes cluster (tests/testbed/k8s-up.sh): its admin kubeconfig,
// the kubectl built for it, each node's containerd socket (images are imported there, as
// nothing is pulled from outside), the host folder the pods' results volume is, and the
// busybox image every node has.
type K8s struct {
	Kubeconfig, KubectlBin, Ctr string
	Sockets                     []string
	Results                     string
	Busybox                     string
}

// K8sEnvFile is the cluster's env file (BENCHCTL_K8S_ENV, else k8s-up.sh's default).
func K8sEnvFile() string {
	if f := os.Getenv("BENCHCTL_K8S_ENV"); f != "" {
		return f
	}
	return "/var/tmp/bctk/k8s.env"
}

// RequireK8s is the testbed's cluster; without one the test fails with CI=true and is
// skipped, loudly, otherwise.
func RequireK8s(t testing.TB) *K8s {
	t.Helper()
	vars, err := readExports(K8sEnvFile())
	if err == nil && vars["BENCHCTL_K8S_KUBECONFIG"] == "" {
		err = fmt.Errorf("%s names no kubeconfig", K8sEnvFile())
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Kubernetes testbed (CI=true requires one): %v; start it with tests/testbed/k8s-up.sh", err)
		}
		t.Skipf("SKIPPED: no Kubernetes testbed: %v (start it with tests/testbed/k8s-up.sh, as root)", err)
	}
	return &K8s{Kubeconfig: vars["BENCHCTL_K8S_KUBECONFIG"], KubectlBin: vars["BENCHCTL_K8S_KUBECTL"], Ctr: vars["BENCHCTL_K8S_CTR"],
		Sockets: strings.Split(vars["BENCHCTL_K8S_NODE_SOCKETS"], ","), Results: vars["BENCHCTL_K8S_RESULTS"], Busybox: vars["BENCHCTL_K8S_BUSYBOX"]}
}

// Kubectl runs kubectl against the cluster (stdin, when not nil), bounded by 3 minutes.
func (k *K8s) Kubectl(t testing.TB, stdin []byte, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.KubectlBin, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ImportImage makes an image named ref of files (path in the image -> mode and content; a
// folder is made for every path's parents) and imports it into every node's containerd, as
// a registry would have given it.
func (k *K8s) ImportImage(t testing.TB, ref string, files map[string]File, entrypoint []string) {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	dirs := map[string]bool{}
	for _, name := range sortedKeys(files) {
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755})
			}
		}
		f := files[name]
		if f.Link != "" {
			tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: f.Link, Mode: 0o777})
			continue
		}
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: f.Mode, Size: int64(len(f.Data))})
		tw.Write(f.Data)
	}
	tw.Close()
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	l := sum(layer.Bytes())
	cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux",
		"config":  map[string]any{"Env": []string{"PATH=/usr/local/bin:/bin"}, "Entrypoint": entrypoint},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + l}},
		"history": []map[string]string{{"created_by": "benchctl e2e"}}})
	c := sum(cfg)
	man, _ := json.Marshal([]map[string]any{{"Config": c + ".json", "RepoTags": []string{ref}, "Layers": []string{l + "/layer.tar"}}})
	var archive bytes.Buffer
	aw := tar.NewWriter(&archive)
	for _, e := range []struct {
		name string
		data []byte
	}{{"manifest.json", man}, {c + ".json", cfg}, {l + "/layer.tar", layer.Bytes()}} {
		aw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data))})
		aw.Write(e.data)
	}
	aw.Close()
	for _, sock := range k.Sockets {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, k.Ctr, "-a", sock, "-n", "k8s.io", "images", "import", "-")
		cmd.Stdin = bytes.NewReader(archive.Bytes())
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("importing %s into %s: %v\n%s", ref, sock, err, out)
		}
	}
}

// File is a file of an image: a mode and content, or a symbolic link.
type File struct {
	Mode int64
	Data []byte
	Link string
}

func sortedKeys(m map[string]File) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
