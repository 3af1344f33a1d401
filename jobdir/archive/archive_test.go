package archive

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/jobdir"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A job's attempts' folders go through the stream whole (files, empty folders), another
// job's do not, and a link or a FIFO in a folder is neither followed nor sent.
func TestRoundTrip(t *testing.T) {
	src := jobdir.Layout{Shared: t.TempDir()}
	write(t, filepath.Join(src.Jobs(), "k8s-1", "job.json"), `{"job":"k8s-1"}`)
	write(t, filepath.Join(src.Jobs(), "k8s-1", "nodes", "0-a", "status.json"), "{}")
	write(t, filepath.Join(src.Jobs(), "k8s-1.1", "perf.csv"), "model\n")
	write(t, filepath.Join(src.Jobs(), "k8s-10", "job.json"), "other")
	os.MkdirAll(filepath.Join(src.Jobs(), "k8s-1", "empty"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(src.Jobs(), "k8s-1", "link"))
	syscall.Mkfifo(filepath.Join(src.Jobs(), "k8s-1", "fifo"), 0o644)
	var buf bytes.Buffer
	files, skipped, err := Write(&buf, src, "k8s-1")
	if err != nil || files != 3 || skipped != 2 {
		t.Fatalf("write: %d files, %d skipped, %v", files, skipped, err)
	}
	dst := jobdir.Layout{Shared: t.TempDir()}
	if n, err := Read(bytes.NewReader(buf.Bytes()), dst, "k8s-1", Limits{}); err != nil || n != 3 {
		t.Fatalf("read: %d %v", n, err)
	}
	for p, want := range map[string]string{"k8s-1/job.json": `{"job":"k8s-1"}`, "k8s-1/nodes/0-a/status.json": "{}", "k8s-1.1/perf.csv": "model\n"} {
		if b, err := os.ReadFile(filepath.Join(dst.Jobs(), p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dst.Jobs(), "k8s-1", "empty")); err != nil || !st.IsDir() {
		t.Errorf("the empty folder: %v", err)
	}
	for _, p := range []string{"k8s-10", "k8s-1/link", "k8s-1/fifo"} {
		if _, err := os.Lstat(filepath.Join(dst.Jobs(), p)); err == nil {
			t.Errorf("%s came through", p)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dst.Jobs(), ".fetch-*")); len(left) != 0 {
		t.Errorf("staging left: %v", left)
	}
	// A second fetch does not replace what is there.
	if _, err := Read(bytes.NewReader(buf.Bytes()), dst, "k8s-1", Limits{}); err == nil || !strings.Contains(err.Error(), "is here already") {
		t.Errorf("a second read: %v", err)
	}
	if _, _, err := Write(&buf, src, "k8s-2"); err == nil || !strings.Contains(err.Error(), "no folder of job k8s-2") {
		t.Errorf("a job without folders: %v", err)
	}
}

type entry struct {
	name string
	typ  byte
	body string
	size int64
	link string
}

func stream(entries ...entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		size := e.size
		if size == 0 {
			size = int64(len(e.body))
		}
		tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: e.typ, Size: size, Mode: 0o644, Linkname: e.link})
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return buf.Bytes()
}

// A hostile stream is refused, saying what, and leaves nothing: names outside the job's
// folders, links, devices, more than the limits, a stream cut short, none of the job's.
func TestHostileStreams(t *testing.T) {
	long := strings.Repeat("é", 3000)
	for _, c := range []struct {
		name string
		data []byte
		lim  Limits
		want string
	}{
		{"parent", stream(entry{name: "../x", typ: tar.TypeReg, body: "x"}), Limits{}, `holds "../x", outside job k8s-1's folders`},
		{"inside then out", stream(entry{name: "k8s-1/../../x", typ: tar.TypeReg, body: "x"}), Limits{}, "outside job k8s-1's folders"},
		{"absolute", stream(entry{name: "/etc/x", typ: tar.TypeReg, body: "x"}), Limits{}, "outside job k8s-1's folders"},
		{"another job", stream(entry{name: "k8s-2/job.json", typ: tar.TypeReg, body: "x"}), Limits{}, "outside job k8s-1's folders"},
		{"the jobs folder", stream(entry{name: ".submit/secret", typ: tar.TypeReg, body: "x"}), Limits{}, "outside job k8s-1's folders"},
		{"a long name", stream(entry{name: long, typ: tar.TypeReg, body: "x"}), Limits{}, "…"},
		{"symlink", stream(entry{name: "k8s-1/l", typ: tar.TypeSymlink, link: "/etc/passwd"}), Limits{}, "neither a folder nor a regular file"},
		{"hard link", stream(entry{name: "k8s-1/l", typ: tar.TypeLink, link: "k8s-1/a"}), Limits{}, "neither a folder nor a regular file"},
		{"fifo", stream(entry{name: "k8s-1/f", typ: tar.TypeFifo}), Limits{}, "neither a folder nor a regular file"},
		{"too large", stream(entry{name: "k8s-1/a", typ: tar.TypeReg, body: "12345"}, entry{name: "k8s-1/b", typ: tar.TypeReg, body: "67890"}), Limits{Bytes: 8}, "larger than 8 bytes"},
		{"too many", stream(entry{name: "k8s-1/", typ: tar.TypeDir}, entry{name: "k8s-1/a/", typ: tar.TypeDir}, entry{name: "k8s-1/b/", typ: tar.TypeDir}), Limits{Entries: 2}, "more than 2 entries"},
		{"cut short", stream(entry{name: "k8s-1/a", typ: tar.TypeReg, body: strings.Repeat("a", 4096)})[:1024], Limits{}, "at k8s-1/a"},
		{"twice the same file", stream(entry{name: "k8s-1/a", typ: tar.TypeReg, body: "1"}, entry{name: "k8s-1/a", typ: tar.TypeReg, body: "2"}), Limits{}, "file exists"},
		{"empty", stream(), Limits{}, "holds no folder of job k8s-1"},
		{"not a tar", []byte(strings.Repeat("garbage ", 100)), Limits{}, "the job folder's stream"},
	} {
		dst := jobdir.Layout{Shared: t.TempDir()}
		_, err := Read(bytes.NewReader(c.data), dst, "k8s-1", c.lim)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if ents, _ := os.ReadDir(dst.Jobs()); len(ents) != 0 {
			t.Errorf("%s: left %v", c.name, ents)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(dst.Shared), "x")); err == nil {
			t.Errorf("%s: wrote outside", c.name)
		}
	}
}
