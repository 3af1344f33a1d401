package models

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
)

// gitRepo makes a repository with a commit of files (and a submodule when sub is given),
// and returns its folder and the commit.
func gitRepo(t *testing.T, files map[string]string, sub string) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	for p, body := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(body), 0o755)
	}
	git("add", "-A")
	if sub != "" {
		git("submodule", "add", "-q", sub, "vendor/sub")
	}
	git("commit", "-q", "-m", "c")
	return dir, git("rev-parse", "HEAD")
}

// A url model's clone: its files, its submodules, the commit; the .git it leaves has the
// url as given. A clone that fails names the model and the url and is a build failure.
func TestCloneAFileURL(t *testing.T) {
	t.Setenv("GIT_CONFIG_COUNT", "1") // the submodule's file:// url, as git 2.38+ asks
	t.Setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
	t.Setenv("GIT_CONFIG_VALUE_0", "always")
	sub, _ := gitRepo(t, map[string]string{"lib.txt": "from the submodule\n"}, "")
	repo, commit := gitRepo(t, map[string]string{"train.py": "print(1)\n", "configs/a.yaml": "a: 1\n"}, "file://"+sub)
	dst := filepath.Join(t.TempDir(), "clones", manifest.CloneKey("file://"+repo))
	os.MkdirAll(filepath.Dir(dst), 0o755)
	got, err := Clone(context.Background(), "pyt_x", "file://"+repo, dst, nil)
	if err != nil || got != commit {
		t.Fatalf("commit %q %v, want %s", got, err, commit)
	}
	for _, f := range []string{"train.py", "configs/a.yaml", "vendor/sub/lib.txt"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".*clone-*")); len(left) != 0 {
		t.Errorf("temporary folders left: %v", left)
	}
	// Again, into the same job: the clone there is reused.
	b := manifest.Benchmark{Name: "pyt_x", Model: &manifest.Model{URL: "file://" + repo, Catalog: filepath.Join(t.TempDir(), "models.json")}}
	if c, err := CloneModel(context.Background(), filepath.Dir(dst), b); err != nil || c != commit {
		t.Errorf("CloneModel over a clone: %q %v", c, err)
	}

	_, err = Clone(context.Background(), "pyt_y", "file:///no/such/repo", filepath.Join(t.TempDir(), "y"), nil)
	var ce *CloneError
	if !errors.As(err, &ce) || exitcode.Of(err) != exitcode.Build || !strings.Contains(err.Error(), "model pyt_y: cloning its url file:///no/such/repo: git clone") {
		t.Errorf("a failed clone: %v (exit %d)", err, exitcode.Of(err))
	}
	for _, bad := range []string{"--upload-pack=touch /tmp/x", "ext::sh -c touch% /tmp/pwned", "https://host/a b"} {
		if _, err := Clone(context.Background(), "m", bad, filepath.Join(t.TempDir(), "z"), nil); err == nil || exitcode.Of(err) != exitcode.Build {
			t.Errorf("url %q: %v", bad, err)
		}
	}
}

// A cred's username and password reach git through the askpass program's environment:
// a server that asks for them (git's own http-backend behind basic authentication) lets
// the clone through, and the password is in no file the clone leaves, nor in an error.
func TestCloneWithCredentials(t *testing.T) {
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git's http-backend is needed: %v", err)
	}
	repo, commit := gitRepo(t, map[string]string{"run.sh": "echo hi\n"}, "")
	const user, pass = "bench", "s3cr3t-pa55word"
	root := filepath.Dir(repo)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		(&cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}).ServeHTTP(w, r)
	}))
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(repo)

	checkout := t.TempDir()
	os.WriteFile(filepath.Join(checkout, CredentialFile), []byte(`{"lab": {"username": "`+user+`", "password": "`+pass+`"}, "wrong": {"username": "x", "password": "nope"}}`), 0o600)
	clones := t.TempDir()
	b := manifest.Benchmark{Name: "pyt_cred", Model: &manifest.Model{URL: url, Cred: "lab", Catalog: filepath.Join(checkout, "models.json")}}
	got, err := CloneModel(context.Background(), clones, b)
	if err != nil || got != commit {
		t.Fatalf("%q %v", got, err)
	}
	filepath.Walk(clones, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), pass) {
				t.Errorf("%s holds the password", p)
			}
		}
		return nil
	})
	// Without the cred, and with a wrong one: refused, the password never in the error.
	b.Model.Cred = ""
	if _, err := CloneModel(context.Background(), t.TempDir(), b); err == nil || exitcode.Of(err) != exitcode.Build {
		t.Errorf("without credentials: %v", err)
	}
	b.Model.Cred = "wrong"
	if _, err := CloneModel(context.Background(), t.TempDir(), b); err == nil || strings.Contains(err.Error(), "nope") {
		t.Errorf("a wrong credential: %v", err)
	}
	b.Model.Cred = "missing"
	if _, err := CloneModel(context.Background(), t.TempDir(), b); err == nil || !strings.Contains(err.Error(), `cred "missing" is not an entry of`) {
		t.Errorf("a cred not in credential.json: %v", err)
	}
}

// A token in the url itself is hidden in the failed clone's error, git's own words included.
func TestACloneErrorHidesTheURLsToken(t *testing.T) {
	_, err := Clone(context.Background(), "m", "https://user:tok3n-value@127.0.0.1:1/org/x.git", filepath.Join(t.TempDir(), "x"), nil)
	if err == nil || strings.Contains(err.Error(), "tok3n-value") || !strings.Contains(err.Error(), "user:***@127.0.0.1:1") {
		t.Errorf("%v", err)
	}
}

// git's words in a failed clone's error are one line, however many git wrote.
func TestACloneErrorIsOneLine(t *testing.T) {
	_, err := Clone(context.Background(), "m", "file:///no/such/repo.git", filepath.Join(t.TempDir(), "x"), nil)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "does not appear to be a git repository / fatal: Could not read") {
		t.Errorf("%q", err)
	}
}

// credential.json as a user may get it wrong, or a co-writer plant it: malformed, a FIFO
// (refused without blocking), an entry that is not an object, one without a password, a
// huge file: each a clear error naming the file, never the password.
func TestBadCredentialFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(p string)
		want  string
	}{
		{"malformed", func(p string) { os.WriteFile(p, []byte(`{"lab": {"username": "u", "password": "s3cr3t"`), 0o600) }, "credential.json:1"},
		{"a FIFO", func(p string) { syscall.Mkfifo(p, 0o600) }, "FIFO"},
		{"not an object", func(p string) { os.WriteFile(p, []byte(`{"lab": "s3cr3t"}`), 0o600) }, `"lab" must be an object with username and password`},
		{"no password", func(p string) { os.WriteFile(p, []byte(`{"lab": {"username": "u"}}`), 0o600) }, `"lab" has no password`},
		{"a list", func(p string) { os.WriteFile(p, []byte(`["s3cr3t"]`), 0o600) }, "must be a JSON object of credentials"},
		{"too large", func(p string) {
			os.WriteFile(p, []byte(`{"lab": {"username": "u", "password": "s3cr3t"}, "pad": "`+strings.Repeat("x", int(manifest.MaxFileSize))+`"}`), 0o600)
		}, "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.setup(filepath.Join(dir, CredentialFile))
			done := make(chan error, 1)
			go func() { _, err := LoadCredential(dir, "lab"); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("got %v, want an error containing %q and no password", err, c.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("LoadCredential blocked")
			}
		})
	}
}

// A clone whose server accepts and never answers ends when its context does, naming the
// model, the url and why; git and its children go with it (procgroup).
func TestACloneThatNeverAnswersEndsWithItsContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // accepted, never answered
		}
	}()
	defer func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	}()
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { // once git waits on the server
		c := <-held
		cancel(errors.New("the job was cancelled"))
		defer c.Close()
	}()
	_, err = Clone(ctx, "pyt_hang", "http://"+ln.Addr().String()+"/x.git", filepath.Join(t.TempDir(), "x"), nil)
	if err == nil || !strings.Contains(err.Error(), "model pyt_hang: cloning its url http://127.0.0.1:") || !strings.Contains(err.Error(), "the job was cancelled") {
		t.Fatalf("%v", err)
	}
}
