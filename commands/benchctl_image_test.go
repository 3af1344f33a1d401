package commands

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/internal/exitcode"
)

// The benchctl image is one layer of the two programs at /usr/local/bin, executable, its
// config naming the layer by its digest, tagged as asked.
func TestBenchctlImageArchive(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("benchctl program"), 0o755)
	os.WriteFile(b, []byte("agent program"), 0o755)
	var out bytes.Buffer
	if err := writeBenchctlImage(&out, "benchctl/benchctl:1.2", [2]string{a, b}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var man []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &man); err != nil || len(man) != 1 || man[0].RepoTags[0] != "benchctl/benchctl:1.2" || len(man[0].Layers) != 1 {
		t.Fatalf("manifest.json: %s %v", files["manifest.json"], err)
	}
	layer := files[man[0].Layers[0]]
	sum := sha256.Sum256(layer)
	var cfg struct {
		Rootfs struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	json.Unmarshal(files[man[0].Config], &cfg)
	if len(cfg.Rootfs.DiffIDs) != 1 || cfg.Rootfs.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("config's diff_ids %v, the layer's digest %x", cfg.Rootfs.DiffIDs, sum)
	}
	lr := tar.NewReader(bytes.NewReader(layer))
	got := map[string]string{}
	for {
		h, err := lr.Next()
		if err != nil {
			break
		}
		body, _ := io.ReadAll(lr)
		if h.Typeflag == tar.TypeReg {
			if h.Mode != 0o755 {
				t.Errorf("%s: mode %o", h.Name, h.Mode)
			}
			got[h.Name] = string(body)
		}
	}
	if got["usr/local/bin/benchctl"] != "benchctl program" || got["usr/local/bin/benchctl-agent"] != "agent program" || len(got) != 2 {
		t.Errorf("the layer holds %v", got)
	}
}

// A program linked dynamically cannot be the image's (it has no libc): refused, exit 4,
// saying how to get the static one; a version becomes a valid tag.
func TestBenchctlImageNeedsStatic(t *testing.T) {
	err := static("/bin/ls") // Debian's: dynamic
	if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "is linked dynamically") {
		t.Errorf("a dynamic program: %v", err)
	}
	if err := static(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing program")
	}
	for v, want := range map[string]string{"v1.4.0": "v1.4.0", "1.4.0+dirty": "1.4.0-dirty", "": "v", ".x": "v.x", strings.Repeat("a", 200): strings.Repeat("a", 128)} {
		if got := imageTag(v); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", v, got, want)
		}
	}
}
