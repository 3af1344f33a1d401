package gpu

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const cdiFixtures = "testdata/cdi/"

func TestReadCDISpecsAsNvidiaCtkWritesThem(t *testing.T) {
	const u0, u1 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c", "GPU-0a7e7c6b-3f0e-55b1-9c1e-2f4c8d7b6a10"
	cases := []struct {
		tree string
		want []string
		from string
	}{
		{"index", []string{"nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all"}, "/etc/cdi/nvidia.yaml"},
		{"uuid", []string{"nvidia.com/gpu=" + u1, "nvidia.com/gpu=" + u0, "nvidia.com/gpu=all"}, "/var/run/cdi/nvidia.yaml"},
		{"json", []string{"nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=" + u1, "nvidia.com/gpu=" + u0, "nvidia.com/gpu=all"}, "/etc/cdi/nvidia.json"},
	}
	for _, c := range cases {
		t.Run(c.tree, func(t *testing.T) {
			s := ReadCDISpecs(cdiFixtures+c.tree, nil)
			if got := s.Names(NVIDIACDIKind); !slices.Equal(got, c.want) {
				t.Errorf("names %v\nwant %v", got, c.want)
			}
			if len(s.Problems) != 0 || s.Devices[c.want[0]] != c.from {
				t.Errorf("problems %v, %s from %q", s.Problems, c.want[0], s.Devices[c.want[0]])
			}
		})
	}
	s := ReadCDISpecs(cdiFixtures+"json", nil)
	if !s.Has("vendor.com/device=myDevice") || s.Has("nvidia.com/gpu=myDevice") || len(s.Names("vendor.com/device")) != 1 {
		t.Errorf("another vendor's kind: %v", s.Devices)
	}
}

// Bad spec files are reported, each with its reason, and skipped; the good spec beside
// them still counts, and a .yml file is not read (engines do not read it either).
func TestReadCDISpecsReportsMalformedSpecs(t *testing.T) {
	s := ReadCDISpecs(cdiFixtures+"malformed", nil)
	want := []string{
		"/etc/cdi/a-noversion.yaml: not a CDI spec: no cdiVersion",
		`/etc/cdi/b-badkind.yaml: not a CDI spec: kind "gpu" is not vendor/class`,
		`/etc/cdi/c-badname.json: device name "bad name; rm -rf" is not a CDI device name`,
		"/etc/cdi/d-notyaml.yaml: not a CDI spec: yaml:",
	}
	if len(s.Problems) != len(want) {
		t.Fatalf("problems %q", s.Problems)
	}
	for i, w := range want {
		if !strings.HasPrefix(s.Problems[i], w) {
			t.Errorf("problem %d: %q, want %q...", i, s.Problems[i], w)
		}
	}
	if got := s.Names(NVIDIACDIKind); !slices.Equal(got, []string{"nvidia.com/gpu=0", "nvidia.com/gpu=1", "nvidia.com/gpu=all"}) {
		t.Errorf("names %v: a bad file's devices (7, 9) must not count", got)
	}
}

// A spec folder a co-tenant can write is no way out of it: a link that leaves the folder,
// a FIFO (which would block a plain open), a directory and an oversized file are
// Problems, and reading them neither hangs nor follows the link.
func TestReadCDISpecsStaysInItsFolders(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "cdi")
	outside := filepath.Join(root, "secret.yaml")
	os.MkdirAll(dir, 0o755)
	good, _ := os.ReadFile(cdiFixtures + "index/etc/cdi/nvidia.yaml")
	os.WriteFile(outside, good, 0o644)
	os.WriteFile(filepath.Join(dir, "inside.yaml"), good, 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "escape.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("inside.yaml", filepath.Join(dir, "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o755)
	big := append([]byte("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: \"5\"}]\n#"), make([]byte, maxCDISpecBytes)...)
	os.WriteFile(filepath.Join(dir, "big.yaml"), big, 0o644)

	done := make(chan CDISpecs)
	go func() { done <- ReadCDISpecs(root, nil) }()
	var s CDISpecs
	select {
	case s = <-done:
	case <-time.After(time.Minute):
		t.Fatal("ReadCDISpecs hangs (a FIFO opened blocking?)")
	}
	joined := strings.Join(s.Problems, "\n")
	for _, w := range []string{"/etc/cdi/escape.yaml: not read:", "/etc/cdi/fifo.yaml: not a regular file", "/etc/cdi/dir.yaml: not a regular file", "/etc/cdi/big.yaml: larger than"} {
		if !strings.Contains(joined, w) {
			t.Errorf("problems lack %q:\n%s", w, joined)
		}
	}
	if len(s.Problems) != 4 || s.Has("nvidia.com/gpu=5") || !s.Has("nvidia.com/gpu=1") {
		t.Errorf("problems %q, devices %v", s.Problems, s.Devices)
	}
}

// Folders that do not exist have no specs and no problems; many files are bounded.
func TestReadCDISpecsBounds(t *testing.T) {
	s := ReadCDISpecs(t.TempDir(), nil)
	if len(s.Devices) != 0 || len(s.Problems) != 0 || !slices.Equal(s.Dirs, CDISpecDirs) {
		t.Errorf("%+v", s)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "cdi")
	os.MkdirAll(dir, 0o755)
	for i := 0; i < maxCDISpecFiles+5; i++ {
		os.WriteFile(filepath.Join(dir, strings.Repeat("a", 3)+string(rune('a'+i%26))+strings.Repeat("b", i/26)+".yaml"),
			[]byte("cdiVersion: 0.5.0\nkind: x.com/y\ndevices: [{name: a}]\n"), 0o644)
	}
	s = ReadCDISpecs(root, []string{"/cdi"})
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0], "more than 256 spec files") || !s.Has("x.com/y=a") {
		t.Errorf("%q", s.Problems)
	}
}
