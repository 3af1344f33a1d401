package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// copyContext writes a build context with the Dockerfile text and the files given.
func copyContext(t *testing.T, dockerfile string, files ...string) BuildInput {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	df := filepath.Join(dir, "Dockerfile")
	os.WriteFile(df, []byte(dockerfile), 0o644)
	return BuildInput{Dockerfile: df, Context: dir}
}

func TestMissingSources(t *testing.T) {
	long := strings.Repeat("a", 6000)
	for _, tc := range []struct {
		name, dockerfile string
		files            []string
		target           string
		want             []string // "LINE SOURCE WHY-PREFIX"
	}{
		{"present", "FROM scratch\nCOPY bin/app /app\n", []string{"bin/app"}, "", nil},
		{"missing", "FROM scratch\nCOPY bin/app /app\n", nil, "", []string{"2 bin/app not in the build context"}},
		{"lower case, tabs, flags", "from scratch\ncopy\t--chown=1:1 --chmod=755 bin/app  /app\n", nil, "", []string{"2 bin/app not in"}},
		{"several sources, one missing", "FROM scratch\nCOPY a b c /d/\n", []string{"a", "c"}, "", []string{"2 b not in"}},
		{"exec form", "FROM scratch\nCOPY [\"bin/my app\", \"/app\"]\n", nil, "", []string{"2 bin/my app not in"}},
		{"continued line", "FROM scratch\nCOPY \\\n  # a comment\n  bin/app \\\n  /app\n", nil, "", []string{"2 bin/app not in"}},
		{"from another stage", "FROM scratch AS b\nCOPY --from=b /x /y\nCOPY --from b /x /y\n", nil, "", nil},
		{"ADD of a URL", "FROM scratch\nADD https://example.com/x.tgz /x\nADD git@github.com:a/b.git /b\n", nil, "", nil},
		{"ADD of a missing file", "FROM scratch\nADD data.tar /\n", nil, "", []string{"2 data.tar not in"}},
		{"variables are left to the builder", "FROM scratch\nARG F=x\nCOPY ${F} $F /x\n", nil, "", nil},
		{"heredoc", "FROM scratch\nCOPY <<EOF /x\nhello\nEOF\n", nil, "", nil},
		{"glob matches", "FROM scratch\nCOPY *.py /app/\n", []string{"a.py"}, "", nil},
		{"glob matches nothing", "FROM scratch\nCOPY *.py /app/\n", []string{"a.go"}, "", []string{"2 *.py matches nothing"}},
		{"the whole context", "FROM scratch\nCOPY . /src\nCOPY ./ /src\n", nil, "", nil},
		{"leading slash is the context's top", "FROM scratch\nCOPY /bin/app /app\n", []string{"bin/app"}, "", nil},
		{"outside the context", "FROM scratch\nCOPY ../secret /x\n", nil, "", []string{"2 ../secret outside the build context"}},
		{"ignored", "FROM scratch\nCOPY bin/app /app\n", []string{"bin/app", ".dockerignore"}, "", nil}, // .dockerignore "x": not this file
		{"stages after the target", "FROM scratch AS run\nCOPY a /a\nFROM scratch AS extra\nCOPY b /b\n", []string{"a"}, "run", nil},
		{"the target's own stage", "FROM scratch AS run\nCOPY b /b\n", nil, "run", []string{"2 b not in"}},
		{"an earlier stage nothing needs is not built", "FROM scratch AS dev\nCOPY devtools /d\nFROM scratch\nCOPY a /a\n", []string{"a"}, "", nil},
		{"a stage the last one copies from is built", "FROM scratch AS bin\nCOPY missing /m\nFROM scratch AS unused\nCOPY other /o\nFROM scratch\nCOPY --from=bin /m /m\n", nil, "", []string{"2 missing not in"}},
		{"a stage the target is built on", "FROM scratch AS base\nCOPY b /b\nFROM base AS run\nFROM scratch AS extra\nCOPY c /c\n", nil, "run", []string{"2 b not in"}},
		{"--from by index and with a space", "FROM scratch\nCOPY zero /z\nFROM scratch\nCOPY one /o\nFROM scratch\nCOPY --from 0 /z /z\n", nil, "", []string{"2 zero not in"}},
		{"a 6,000-character source", "FROM scratch\nCOPY " + long + " /x\n", nil, "", []string{"2 " + long + " not in"}},
		{"no sources", "FROM scratch\nCOPY\nCOPY onlyone\nADD\n", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := copyContext(t, tc.dockerfile, tc.files...)
			in.Target = tc.target
			got, err := MissingSources(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				if s := strings.Join([]string{strconv.Itoa(got[i].Line), got[i].Source, got[i].Why}, " "); !strings.HasPrefix(s, w) {
					t.Errorf("got %q, want %q…", s, w)
				}
				if got[i].Dockerfile != in.Dockerfile {
					t.Errorf("Dockerfile %q", got[i].Dockerfile)
				}
			}
		})
	}
}

// A source the .dockerignore leaves out is as missing as one that is not there.
func TestMissingSourcesHonoursDockerignore(t *testing.T) {
	in := copyContext(t, "FROM scratch\nCOPY bin/app /app\nCOPY keep /k\n", "bin/app", "keep")
	os.WriteFile(filepath.Join(in.Context, ".dockerignore"), []byte("bin/\n"), 0o644)
	got, err := MissingSources(in)
	if err != nil || len(got) != 1 || got[0].Source != "bin/app" || got[0].Why != "left out of the build context by its .dockerignore" {
		t.Fatalf("%v %v", got, err)
	}
}

// A Dockerfile that is a FIFO is not read (nothing blocks); the builder reports it.
func TestMissingSourcesUnreadableDockerfile(t *testing.T) {
	in := copyContext(t, "")
	os.Remove(in.Dockerfile)
	if err := syscall.Mkfifo(in.Dockerfile, 0o644); err != nil {
		t.Skip(err)
	}
	if got, err := MissingSources(in); err != nil || got != nil {
		t.Fatalf("%v %v", got, err)
	}
}

// The real build stops before the builder runs, naming the Dockerfile's line and the file,
// with exit code 2.
func TestBuildFailsOnAMissingCopySource(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("# the example\nFROM scratch\nCOPY bin/allreduce /allreduce\n"), 0o644)
	p := filepath.Join(dir, "m.yaml")
	os.WriteFile(p, []byte("name: t\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: a, command: [/allreduce]}]\n"), 0o644)
	m, _, err := manifest.Load(p, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBuilder{}
	_, err = Build(context.Background(), BuildOptions{Manifest: m, Cache: newCache(t), Builder: b})
	var me *MissingSourcesError
	if !errors.As(err, &me) || me.ExitCode() != 2 || b.builds != 0 {
		t.Fatalf("%v (builds %d)", err, b.builds)
	}
	want := "the build context lacks 1 file(s) the Dockerfile copies:\n  " + filepath.Join(dir, "Dockerfile") + ":3: bin/allreduce: not in the build context " + dir + "\n" + MissingSourceHint
	if err.Error() != want {
		t.Fatalf("got\n%s\nwant\n%s", err, want)
	}
}

func TestFinalStage(t *testing.T) {
	for _, tc := range []struct{ dockerfile, base, program string }{
		{"FROM scratch\nCOPY bin/allreduce /allreduce\n", "scratch", "/allreduce"},
		{"FROM golang AS b\nCOPY . /src\nFROM scratch\nCOPY --from=b /out/app /usr/bin/\n", "scratch", "/usr/bin/app"},
		{"FROM scratch\nCOPY a b /bin/\nCOPY bin/x /x\n", "scratch", "/x"},
		{"FROM --platform=linux/amd64 rocm/pytorch:6.4 AS run\nCOPY train.py /w/\n", "rocm/pytorch:6.4", "/w/train.py"},
		{"FROM scratch\nCOPY app relative/\n", "scratch", ""},
		{"FROM scratch\n", "scratch", ""},
		{"", "", ""},
	} {
		base, prog := FinalStage([]byte(tc.dockerfile))
		if base != tc.base || prog != tc.program {
			t.Errorf("%q: got %q %q, want %q %q", tc.dockerfile, base, prog, tc.base, tc.program)
		}
	}
}
