package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/procgroup"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// A model with a url runs in the folder its `git clone` makes (madengine's model
// directory): the job's rank 0 clones it once (CloneModel), into the job folder, and every
// node copies that clone into its workspace, with the model's script folder copied over it.
// A node never clones: it may have no network where rank 0 has. The commit cloned is
// perf.csv's git_commit for the model. The model's cred names an entry of the checkout's
// credential.json ({"<cred>": {"username": U, "password": P}}); its values reach git through
// an askpass program's environment, never a URL, a file, a log line or a printed command.

// CredentialFile is the checkout's credentials file, beside its models.json (madengine's).
const CredentialFile = "credential.json"

// checkURL refuses what cannot be a repository to clone: an option in disguise, a
// control character, a scheme git would run a program for.
func checkURL(rawURL string) error {
	u := strings.TrimSpace(rawURL)
	switch {
	case strings.HasPrefix(u, "-"):
		return fmt.Errorf("url %s starts with '-': not a repository", document.Quote(u))
	case strings.ContainsAny(u, "\x00\n\r\t "):
		return fmt.Errorf("url %s holds a space or a control character", document.Quote(u))
	case strings.HasPrefix(u, "ext::") || strings.HasPrefix(u, "fd::"):
		return fmt.Errorf("url %s uses a git transport that runs a program: give an https, ssh, git or file url", document.Quote(u))
	}
	return nil
}

// GitCredential is an entry of credential.json.
type GitCredential struct {
	Username string
	Password string
}

// LoadCredential reads the entry name of the checkout's credential.json.
func LoadCredential(checkout, name string) (*GitCredential, error) {
	file := filepath.Join(checkout, CredentialFile)
	data, err := safefile.ReadFile(file, manifest.MaxFileSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cred %s: the checkout has no %s to hold it", document.Quote(name), CredentialFile)
		}
		return nil, fmt.Errorf("cred %s: %s: %w", document.Quote(name), file, err)
	}
	root, err := document.Parse("credential.json", data)
	if err != nil {
		var pe *document.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", file, pe.Line, pe.Msg)
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if root.Kind != document.MapNode {
		return nil, fmt.Errorf("%s: must be a JSON object of credentials", file)
	}
	for i, k := range root.Keys {
		if k.Value != name {
			continue
		}
		e := root.Items[i]
		if e.Kind != document.MapNode {
			return nil, fmt.Errorf("%s:%d: %s must be an object with username and password", file, k.Line, document.Quote(name))
		}
		c := &GitCredential{}
		for j, f := range e.Keys {
			v := e.Items[j]
			if v.Kind != document.ScalarNode {
				return nil, fmt.Errorf("%s:%d: %s.%s must be a string", file, f.Line, name, f.Value)
			}
			switch f.Value {
			case "username":
				c.Username = v.Value
			case "password", "token":
				c.Password = v.Value
			}
		}
		if c.Password == "" {
			return nil, fmt.Errorf("%s:%d: %s has no password", file, k.Line, document.Quote(name))
		}
		return c, nil
	}
	return nil, fmt.Errorf("cred %s is not an entry of %s", document.Quote(name), file)
}

// CloneError is a clone that failed: a build failure (exit 2), naming the model and url.
type CloneError struct {
	Model, URL string
	Err        error
}

func (e *CloneError) Error() string {
	return fmt.Sprintf("model %s: cloning its url %s: %v", e.Model, manifest.RedactURL(e.URL), e.Err)
}

func (e *CloneError) Unwrap() error { return e.Err }

// ExitCode is 2, madengine's build failure: the model could not be prepared.
func (e *CloneError) ExitCode() int { return 2 }

// Clone clones url with its submodules into dst, which must not exist (it is made under a
// temporary name beside it and renamed, so a reader sees all of it or nothing), and
// returns the commit checked out. cred, when not nil, is given to git through an askpass
// program that reads it from its environment. ctx bounds the clone: git and its children
// are killed when it ends.
func Clone(ctx context.Context, model, rawURL, dst string, cred *GitCredential) (string, error) {
	fail := func(err error) (string, error) { return "", &CloneError{Model: model, URL: rawURL, Err: err} }
	if err := checkURL(rawURL); err != nil {
		return fail(err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return fail(errors.New("git is not installed where the job's rank 0 runs: install git there (rank 0 clones, the other nodes copy its clone)"))
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".clone-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1")
	if cred != nil {
		askDir, err := os.MkdirTemp("", "benchctl-askpass-")
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(askDir)
		ask := filepath.Join(askDir, "askpass")
		// The program holds no secret: git asks it, and it answers from its environment.
		script := "#!/bin/sh\ncase \"$1\" in\n[Uu]sername*) printf '%s\\n' \"$BENCHCTL_GIT_USERNAME\" ;;\n*) printf '%s\\n' \"$BENCHCTL_GIT_PASSWORD\" ;;\nesac\n"
		if err := os.WriteFile(ask, []byte(script), 0o700); err != nil {
			return fail(err)
		}
		env = append(env, "GIT_ASKPASS="+ask, "BENCHCTL_GIT_USERNAME="+cred.Username, "BENCHCTL_GIT_PASSWORD="+cred.Password)
	}
	repo := filepath.Join(tmp, "repo")
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, git, args...)
		cmd.Env = env
		procgroup.Own(cmd)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		text := strings.TrimSpace(out.String())
		if cred != nil && cred.Password != "" {
			text = strings.ReplaceAll(text, cred.Password, manifest.Redacted)
		}
		if r := manifest.RedactURL(rawURL); r != rawURL { // git quotes the url, a token in it too
			text = strings.ReplaceAll(text, strings.TrimSpace(rawURL), r)
		}
		if err != nil {
			if ctx.Err() != nil {
				return "", fmt.Errorf("git %s: %w", args[0], context.Cause(ctx))
			}
			return "", fmt.Errorf("git %s: %v: %s", args[0], err, lastLines(text, 10))
		}
		return text, nil
	}
	if _, err := run("clone", "--recurse-submodules", "--quiet", "--", strings.TrimSpace(rawURL), repo); err != nil {
		return fail(err)
	}
	commit, err := run("-C", repo, "rev-parse", "HEAD")
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(repo, dst); err != nil {
		return fail(err)
	}
	return strings.TrimSpace(commit), nil
}

// lastLines is the last n non-blank lines of text on one line (" / " between them), saying
// how many were left out before them.
func lastLines(text string, n int) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) <= n {
		return strings.Join(lines, " / ")
	}
	return fmt.Sprintf("(%d lines before) %s", len(lines)-n, strings.Join(lines[len(lines)-n:], " / "))
}

// cloneTimeout bounds a model's clone, as madengine bounds nothing: a generous hour.
const cloneTimeout = time.Hour

// CloneModel clones a url model once for the job into dir (a folder of the job folder),
// at CloneKey: a clone already there (another model of the same url) is reused. The
// credentials come from the checkout's credential.json when the model names a cred. It
// returns the commit.
func CloneModel(ctx context.Context, dir string, b manifest.Benchmark) (string, error) {
	m := b.Model
	dst := filepath.Join(dir, manifest.CloneKey(m.URL))
	if st, err := os.Lstat(dst); err == nil && st.IsDir() {
		return headOf(ctx, b.Name, m.URL, dst)
	}
	var cred *GitCredential
	if m.Cred != "" {
		c, err := LoadCredential(filepath.Dir(m.Catalog), m.Cred)
		if err != nil {
			return "", &CloneError{Model: b.Name, URL: m.URL, Err: err}
		}
		cred = c
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &CloneError{Model: b.Name, URL: m.URL, Err: err}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cloneTimeout, fmt.Errorf("the clone took longer than %s", cloneTimeout))
	defer cancel()
	return Clone(ctx, b.Name, m.URL, dst, cred)
}

// headOf is the commit of a clone made earlier in the job.
func headOf(ctx context.Context, model, rawURL, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD")
	procgroup.Own(cmd)
	out, err := cmd.Output()
	if err != nil {
		return "", &CloneError{Model: model, URL: rawURL, Err: fmt.Errorf("reading the commit of the clone %s: %v", dir, err)}
	}
	return strings.TrimSpace(string(out)), nil
}

// JobCatalog is the catalog as a node's run asks for it (runner.Catalog): CloneModel and
// MeasureDataSizes.
type JobCatalog struct{}

// Clone is CloneModel.
func (JobCatalog) Clone(ctx context.Context, dir string, b manifest.Benchmark) (string, error) {
	return CloneModel(ctx, dir, b)
}

// MeasureData is MeasureDataSizes.
func (JobCatalog) MeasureData(benches []manifest.Benchmark) { MeasureDataSizes(benches) }
