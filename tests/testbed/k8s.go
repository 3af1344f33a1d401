package testbed

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
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
	// Registry is the registry the kubelets pull from (host:port, plain HTTP), which this
	// machine reaches too; RegistryPush is the same registry as the testbed's engines
	// push to it ("" without the Docker testbed).
	Registry, RegistryPush string
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
		Sockets: strings.Split(vars["BENCHCTL_K8S_NODE_SOCKETS"], ","), Results: vars["BENCHCTL_K8S_RESULTS"], Busybox: vars["BENCHCTL_K8S_BUSYBOX"],
		Registry: vars["BENCHCTL_K8S_REGISTRY"], RegistryPush: vars["BENCHCTL_K8S_REGISTRY_PUSH"]}
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
	layer, cfg := imageParts(files, entrypoint)
	l, c := sha256Hex(layer), sha256Hex(cfg)
	man, _ := json.Marshal([]map[string]any{{"Config": c + ".json", "RepoTags": []string{ref}, "Layers": []string{l + "/layer.tar"}}})
	var archive bytes.Buffer
	aw := tar.NewWriter(&archive)
	for _, e := range []struct {
		name string
		data []byte
	}{{"manifest.json", man}, {c + ".json", cfg}, {l + "/layer.tar", layer}} {
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

// imageParts are an image's one layer (an uncompressed tar of files, a folder made for
// every path's parents) and its config.
func imageParts(files map[string]File, entrypoint []string) (layer, cfg []byte) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
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
	cfg, _ = json.Marshal(map[string]any{"architecture": "amd64", "os": "linux",
		"config":  map[string]any{"Env": []string{"PATH=/usr/local/bin:/bin"}, "Entrypoint": entrypoint},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + sha256Hex(buf.Bytes())}},
		"history": []map[string]string{{"created_by": "benchctl e2e"}}})
	return buf.Bytes(), cfg
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// PushImage makes an image of files (as ImportImage) and pushes it to the cluster's
// registry as repo:tag through the registry's HTTP API, as a CI pushes a benchmark's
// image; it returns the reference the kubelets pull.
func (k *K8s) PushImage(t testing.TB, repo, tag string, files map[string]File, entrypoint []string) string {
	t.Helper()
	if k.Registry == "" {
		t.Fatalf("the cluster has no registry (%s names none): start it again with tests/testbed/k8s-up.sh", K8sEnvFile())
	}
	layer, cfg := imageParts(files, entrypoint)
	base := "http://" + k.Registry + "/v2/" + repo
	client := &http.Client{Timeout: time.Minute}
	push := func(blob []byte) string {
		digest := "sha256:" + sha256Hex(blob)
		resp, err := client.Post(base+"/blobs/uploads/", "application/octet-stream", nil)
		if err != nil {
			t.Fatalf("pushing to %s: %v", k.Registry, err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusAccepted || loc == "" {
			t.Fatalf("starting an upload to %s: %s", k.Registry, resp.Status)
		}
		if !strings.Contains(loc, "://") {
			loc = "http://" + k.Registry + loc
		}
		sep := "?"
		if strings.Contains(loc, "?") {
			sep = "&"
		}
		req, _ := http.NewRequest(http.MethodPut, loc+sep+"digest="+digest, bytes.NewReader(blob))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err = client.Do(req)
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("uploading a blob to %s: %v %v", k.Registry, err, resp)
		}
		resp.Body.Close()
		return digest
	}
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": push(cfg), "size": len(cfg)},
		"layers": []map[string]any{{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": push(layer), "size": len(layer)}}})
	req, _ := http.NewRequest(http.MethodPut, base+"/manifests/"+tag, bytes.NewReader(man))
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("pushing the manifest of %s:%s to %s: %v %v", repo, tag, k.Registry, err, resp)
	}
	resp.Body.Close()
	return k.Registry + "/" + repo + ":" + tag
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
