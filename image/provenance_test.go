package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func TestProvenance(t *testing.T) {
	repo := t.TempDir()
	ctx := filepath.Join(repo, "docker")
	os.MkdirAll(ctx, 0o755)
	df := filepath.Join(ctx, "Dockerfile")
	os.WriteFile(df, []byte("ARG BASE=rocm/pytorch:latest\nFROM ${BASE} AS build\nFROM build\n"), 0o644)
	in := BuildInput{Dockerfile: df, Context: ctx, BuildArgs: []manifest.EnvVar{{Name: "BASE", Value: "rocm/pytorch:rocm6.2"}}}
	if p := ProvenanceOf(in); p.Base != "rocm/pytorch:rocm6.2" || p.GitCommit != "" {
		t.Fatalf("no repository: %+v", p)
	}
	sha := strings.Repeat("a1", 20)
	git := filepath.Join(repo, ".git")
	os.MkdirAll(filepath.Join(git, "refs", "heads"), 0o755)
	os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(git, "refs", "heads", "main"), []byte(sha+"\n"), 0o644)
	if got := GitCommit(ctx); got != sha {
		t.Fatalf("loose ref: %q", got)
	}
	os.Remove(filepath.Join(git, "refs", "heads", "main"))
	packed := strings.Repeat("b2", 20)
	os.WriteFile(filepath.Join(git, "packed-refs"), []byte("# pack-refs with: peeled\n"+packed+" refs/heads/main\n"), 0o644)
	if got := GitCommit(ctx); got != packed {
		t.Fatalf("packed ref: %q", got)
	}
	os.WriteFile(filepath.Join(git, "HEAD"), []byte(sha+"\n"), 0o644)
	if got := GitCommit(ctx); got != sha {
		t.Fatalf("detached: %q", got)
	}
	os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: ../../etc/passwd\n"), 0o644)
	if got := GitCommit(ctx); got != "" {
		t.Fatalf("a ref out of the repository: %q", got)
	}
	// A real repository, when git is here.
	if _, err := exec.LookPath("git"); err == nil {
		r := t.TempDir()
		run := func(args ...string) string {
			c := exec.Command("git", append([]string{"-C", r, "-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		run("init", "-q")
		os.WriteFile(filepath.Join(r, "f"), []byte("x"), 0o644)
		run("add", "f")
		run("commit", "-qm", "x")
		if got, want := GitCommit(r), run("rev-parse", "HEAD"); got != want {
			t.Fatalf("git repository: %q, want %q", got, want)
		}
		run("pack-refs", "--all")
		if got, want := GitCommit(r), run("rev-parse", "HEAD"); got != want {
			t.Fatalf("after pack-refs: %q, want %q", got, want)
		}
	}
}
