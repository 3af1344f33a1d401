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

// A spec linked from a spec folder to a file elsewhere is read, as engines read it (the
// CDI library opens each file by path), and said so in Links; a FIFO (which would block a
// plain open), a directory, a device file and an oversized file are Problems, whether named
// in the folder or linked to, and reading them never hangs.
func TestReadCDISpecsFollowsLinksToFilesOnly(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "cdi")
	elsewhere := filepath.Join(root, "opt", "nvidia")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(elsewhere, 0o755)
	good, _ := os.ReadFile(cdiFixtures + "index/etc/cdi/nvidia.yaml")
	outside := filepath.Join(elsewhere, "nvidia.yaml")
	os.WriteFile(outside, []byte(strings.ReplaceAll(string(good), "kind: nvidia.com/gpu", "kind: example.com/gpu")), 0o644)
	os.WriteFile(filepath.Join(dir, "inside.yaml"), good, 0o644)
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(outside, "linked.yaml")
	link("inside.yaml", "alias.yaml")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(elsewhere, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(elsewhere, "fifo"), "to-fifo.yaml")
	link(elsewhere, "to-dir.yaml")
	link("/dev/null", "to-device.yaml")
	link(filepath.Join(elsewhere, "gone.yaml"), "dangling.yaml")
	link("loop2.yaml", "loop1.yaml")
	link("loop1.yaml", "loop2.yaml")
	os.Mkdir(filepath.Join(dir, "dir.yaml"), 0o755)
	big := append([]byte("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: [{name: \"5\"}]\n#"), make([]byte, maxCDISpecBytes)...)
	os.WriteFile(filepath.Join(elsewhere, "big"), big, 0o644)
	link(filepath.Join(elsewhere, "big"), "big.yaml")

	done := make(chan CDISpecs)
	go func() { done <- ReadCDISpecs(root, nil) }()
	var s CDISpecs
	select {
	case s = <-done:
	case <-time.After(time.Minute):
		t.Fatal("ReadCDISpecs hangs (a FIFO opened blocking?)")
	}
	joined := strings.Join(s.Problems, "\n")
	for _, w := range []string{"/etc/cdi/fifo.yaml: not a regular file", "/etc/cdi/to-fifo.yaml: a link to " + filepath.Join(elsewhere, "fifo") + ": not a regular file",
		"/etc/cdi/to-dir.yaml: a link to " + elsewhere + ": not a regular file", "/etc/cdi/to-device.yaml: a link to /dev/null: not a regular file",
		"/etc/cdi/dangling.yaml: a link to " + filepath.Join(elsewhere, "gone.yaml") + ": not read:", "/etc/cdi/loop1.yaml: a link to loop2.yaml: not read:",
		"/etc/cdi/dir.yaml: not a regular file", "/etc/cdi/big.yaml: a link to " + filepath.Join(elsewhere, "big") + ": larger than"} {
		if !strings.Contains(joined, w) {
			t.Errorf("problems lack %q:\n%s", w, joined)
		}
	}
	if len(s.Problems) != 9 || s.Has("nvidia.com/gpu=5") || !s.Has("nvidia.com/gpu=1") || !s.Has("example.com/gpu=1") {
		t.Errorf("problems %q, devices %v", s.Problems, s.Devices)
	}
	if w := []string{"/etc/cdi/alias.yaml: a link to inside.yaml, read as engines read it", "/etc/cdi/linked.yaml: a link to " + outside + ", read as engines read it"}; !slices.Equal(s.Links, w) {
		t.Errorf("links %q, want %q", s.Links, w)
	}
	if got := s.DeviceNodes["nvidia.com/gpu=1"]; !slices.Equal(got, []string{"/dev/nvidia1"}) {
		t.Errorf("device nodes of gpu=1: %q", got)
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
