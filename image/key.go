package image

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/benchctl/benchctl/image/digestmemo"

	"github.com/benchctl/benchctl/internal/safefile"

	"github.com/benchctl/benchctl/manifest"
)

// KeyVersion is mixed into every key: bump it when the key material changes meaning.
const KeyVersion = "benchctl-image-key/v1"

// BuildInput is everything that determines a built image.
type BuildInput struct {
	Dockerfile string // absolute path
	Context    string // absolute path
	Target     string
	Platform   string
	BuildArgs  []manifest.EnvVar // sorted by name; never secrets (the manifest rejects them)
}

// InputFromManifest returns the build input of a manifest that builds its image.
func InputFromManifest(m *manifest.Manifest) BuildInput {
	return BuildInput{Dockerfile: realPath(m.Image.Dockerfile), Context: realPath(m.Image.Context), Target: m.Image.Target,
		Platform: m.Image.Platform, BuildArgs: m.Image.BuildArgs}
}

// realPath resolves symbolic links in a path (a context folder that is a link would not be
// walked, and builders would not see into it); a path that cannot be resolved is kept.
func realPath(p string) string {
	if p == "" {
		return p
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// contextFile is one entry of the build context as the builder sees it.
type contextFile struct {
	rel  string // slash-separated path relative to the context
	abs  string
	mode fs.FileMode
	size int64
	link string // symlink target
}

// walkContext lists the context's entries in a stable order, honouring .dockerignore.
// The Dockerfile and .dockerignore are always part of what the builder receives.
func walkContext(in BuildInput) ([]contextFile, error) {
	rules, ignFile, err := readDockerignore(in)
	if err != nil {
		return nil, err
	}
	dfRel, _ := filepath.Rel(in.Context, in.Dockerfile)
	dfRel = filepath.ToSlash(dfRel)
	ignRel := ".dockerignore"
	if ignFile != "" {
		if r, err := filepath.Rel(in.Context, ignFile); err == nil {
			ignRel = filepath.ToSlash(r)
		}
	}
	var files []contextFile
	err = filepath.WalkDir(in.Context, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return contextError(in, p, err)
		}
		if p == in.Context {
			return nil
		}
		rel, _ := filepath.Rel(in.Context, p)
		rel = filepath.ToSlash(rel)
		if rules.ignored(rel) && rel != ".dockerignore" && rel != ignRel && rel != dfRel {
			if d.IsDir() && rules.canSkipDir() && !strings.HasPrefix(dfRel+"/", rel+"/") && !strings.HasPrefix(ignRel, rel+"/") {
				return fs.SkipDir // nothing below can be re-included
			}
			return nil // a re-included child of an ignored folder is still found: keep walking
		}
		info, err := d.Info()
		if err != nil {
			return contextError(in, p, err)
		}
		f := contextFile{rel: rel, abs: p, mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if f.link, err = os.Readlink(p); err != nil {
				return contextError(in, p, err)
			}
		case info.Mode().IsRegular():
			f.size = info.Size()
		case info.IsDir():
		default:
			return nil // sockets, devices, pipes are not sent to builders
		}
		files = append(files, f)
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, err
}

var (
	fromRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)`) })
	// A global ARG (before the first FROM) with its default: what FROM $BASE_DOCKER uses
	// when no build arg is given, as MAD's Dockerfiles are written.
	argRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^\s*ARG\s+([A-Za-z_][A-Za-z0-9_]*)(?:=(\S*))?`) })
	// $NAME, ${NAME}, ${NAME:-word} and ${NAME:+word}, as Dockerfile substitution has them.
	dfVarRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\})`)
	})
)

// BaseImages returns the FROM references of a Dockerfile, with $ARG and ${ARG} substituted
// from buildArgs, else from the global ARG's default (stages named earlier are included as
// written).
func BaseImages(dockerfile []byte, args []manifest.EnvVar) []string {
	defaults := map[string]string{}
	firstFrom := len(dockerfile)
	if loc := fromRE().FindIndex(dockerfile); loc != nil {
		firstFrom = loc[0]
	}
	for _, m := range argRE().FindAllSubmatch(dockerfile[:firstFrom], -1) {
		defaults[string(m[1])] = strings.Trim(string(m[2]), `"'`)
	}
	lookup := func(k string) (string, bool) {
		for _, a := range args {
			if a.Name == k {
				return a.Value, true
			}
		}
		v, ok := defaults[k]
		return v, ok
	}
	var refs []string
	for _, m := range fromRE().FindAllSubmatch(dockerfile, -1) {
		refs = append(refs, substDockerfile(string(m[1]), lookup))
	}
	return refs
}

// substDockerfile substitutes variables in a FROM reference the way the Dockerfile
// frontend does; an unset variable is empty.
func substDockerfile(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return dfVarRE().ReplaceAllStringFunc(s, func(v string) string {
		m := dfVarRE().FindStringSubmatch(v)
		name := m[1] + m[2]
		val, set := lookup(name)
		switch m[3] {
		case "-":
			if !set || val == "" {
				return m[4]
			}
		case "+":
			if set && val != "" {
				return m[4]
			}
			return ""
		}
		return val
	})
}

// maxDockerfile bounds the Dockerfile and .dockerignore reads.
const maxDockerfile = 16 << 20

// Key computes the content key of an image: a sha256 over the Dockerfile bytes, every
// context file's path, type, permission bits and content (as the builder would receive
// them, .dockerignore honoured), the build args, target, platform and base image refs.
// Modification times, owners and absolute paths are not part of it, so the same inputs give
// the same key on any machine.
func Key(in BuildInput) (string, error) { return KeyUsing(in, nil) }

// KeyUsing is Key with the context's files' digests taken from memo where it has them for
// the very files (nil: every file is read).
func KeyUsing(in BuildInput, memo *digestmemo.Memo) (string, error) {
	df, err := safefile.ReadFile(in.Dockerfile, maxDockerfile) // a FIFO is refused without blocking
	if err != nil {
		return "", fmt.Errorf("reading the Dockerfile: %w", err)
	}
	files, err := walkContext(in)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	w := bufio.NewWriter(h)
	fmt.Fprintf(w, "%s\n", KeyVersion)
	fmt.Fprintf(w, "dockerfile %d\n", len(df))
	w.Write(df)
	fmt.Fprintf(w, "\ntarget %q\nplatform %q\n", in.Target, in.Platform)
	for _, a := range in.BuildArgs {
		fmt.Fprintf(w, "arg %q=%q\n", a.Name, a.Value)
	}
	for _, ref := range BaseImages(df, in.BuildArgs) {
		fmt.Fprintf(w, "from %q\n", ref)
	}
	buf := make([]byte, 256<<10)
	for _, f := range files {
		kind := "f"
		switch {
		case f.mode&fs.ModeSymlink != 0:
			kind = "l"
		case f.mode.IsDir():
			kind = "d"
		}
		fmt.Fprintf(w, "%s %q %o %q %d\n", kind, f.rel, f.mode.Perm()|f.mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), f.link, f.size)
		if kind == "f" {
			if err := hashFile(w, f.abs, buf, memo); err != nil {
				return "", contextError(in, f.abs, err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(w io.Writer, p string, buf []byte, memo *digestmemo.Memo) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	sum, err := memo.Digest(p, f, func() (string, error) {
		fh := sha256.New()
		if _, err := io.CopyBuffer(fh, f, buf); err != nil {
			return "", err
		}
		return hex.EncodeToString(fh.Sum(nil)), nil
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, sum+"\n")
	return err
}

// ShortKey is the key prefix used in default tags and messages.
func ShortKey(key string) string { return key[:min(12, len(key))] }

// DefaultTag is the tag of a built image when the manifest sets none.
func DefaultTag(name, key string) string {
	return "benchctl/" + strings.ToLower(name) + ":" + ShortKey(key)
}

// ContextError is a build context entry that cannot be read: bad input when it is a
// permission (or path) problem, fixed by making it readable or by ignoring it.
type ContextError struct {
	Path       string
	IgnoreFile string // where to ignore it
	Err        error
}

func (e *ContextError) Error() string {
	if errors.Is(e.Err, fs.ErrPermission) {
		return fmt.Sprintf("the build context cannot be read: %v; make it readable by this user, or list it in %s if the image does not need it", e.Err, e.IgnoreFile)
	}
	return fmt.Sprintf("the build context cannot be read: %v (%s)", e.Err, e.Path)
}

func (e *ContextError) Unwrap() error { return e.Err }

// InvalidInput: a permission or path problem is the user's to fix (exit 4); an I/O error
// (EIO, ESTALE on NFS) is a failure (exit 1) that a retry may not see.
func (e *ContextError) InvalidInput() bool {
	return errors.Is(e.Err, fs.ErrPermission) || errors.Is(e.Err, syscall.ELOOP) || errors.Is(e.Err, syscall.ENAMETOOLONG)
}

func contextError(in BuildInput, p string, err error) error {
	var ce *ContextError
	if errors.As(err, &ce) {
		return err
	}
	return &ContextError{Path: p, IgnoreFile: ignoreFile(in), Err: err}
}
