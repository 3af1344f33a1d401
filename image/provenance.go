package image

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
)

// Provenance is where a built image comes from, for perf.csv: the base image (the first
// FROM of its Dockerfile, build args substituted) and the commit of the git repository its
// build context is in ("" when it is not in one).
type Provenance struct {
	Base      string
	GitCommit string
}

// ProvenanceOf reads a build's provenance; what cannot be read stays empty.
func ProvenanceOf(in BuildInput) Provenance {
	var p Provenance
	if df, err := safefile.ReadFile(in.Dockerfile, maxDockerfile); err == nil {
		if refs := BaseImages(df, in.BuildArgs); len(refs) > 0 {
			p.Base = refs[0]
		}
	}
	p.GitCommit = GitCommit(in.Context)
	return p
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// GitCommit is the commit checked out in the git repository that holds dir (HEAD
// resolved through a loose or packed ref), or "" when there is none or it cannot be read.
// It reads the repository's files; git need not be installed.
func GitCommit(dir string) string {
	gitDir := findGitDir(dir)
	if gitDir == "" {
		return ""
	}
	head := readSmall(filepath.Join(gitDir, "HEAD"))
	ref, isRef := strings.CutPrefix(head, "ref: ")
	if !isRef {
		if shaRE.MatchString(head) {
			return head // detached
		}
		return ""
	}
	ref = strings.TrimSpace(ref)
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return ""
	}
	common := gitDir // a worktree keeps its refs in the main repository
	if c := readSmall(filepath.Join(gitDir, "commondir")); c != "" {
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	for _, d := range []string{gitDir, common} {
		if sha := readSmall(filepath.Join(d, filepath.FromSlash(ref))); shaRE.MatchString(sha) {
			return sha
		}
	}
	packed, err := safefile.ReadFile(filepath.Join(common, "packed-refs"), 64<<20)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if sha, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == ref && shaRE.MatchString(sha) {
			return sha
		}
	}
	return ""
}

// findGitDir walks up from dir to the repository: a .git folder, or a .git file that
// names the folder (a worktree or submodule).
func findGitDir(dir string) string {
	for d := dir; ; {
		p := filepath.Join(d, ".git")
		if st, err := os.Stat(p); err == nil {
			if st.IsDir() {
				return p
			}
			if g, ok := strings.CutPrefix(readSmall(p), "gitdir: "); ok {
				if !filepath.IsAbs(g) {
					g = filepath.Join(d, g)
				}
				return g
			}
			return ""
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

func readSmall(p string) string {
	b, err := safefile.ReadFile(p, 4<<10)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
