package image

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/benchctl/benchctl/internal/exitcode"
)

// Builder builds an image and publishes it to the cache under its key. Implementations:
// DockerBuilder (a Docker Engine, then ImageSave into the cache) and BuildKitBuilder (a
// buildkitd that exports a docker-archive tar straight into the cache).
type Builder interface {
	Name() string
	Build(ctx context.Context, req BuildRequest) (*Entry, error)
}

// BuildRequest is one build.
type BuildRequest struct {
	Input    BuildInput
	Key      string
	Tag      string
	Manifest string // manifest name, for labels and metadata
	NoCache  bool
	// EngineOnly leaves a built image on the engine and publishes nothing: the caller
	// publishes it later (rank 0 with distribution: stream writes the cache entry from the
	// same docker save that feeds the stream). The entry returned then has only its
	// ImageID, Key and Tags. A builder that does not build into an engine ignores it.
	EngineOnly bool
	Cache      *Cache
	Progress   ProgressFunc
	Version    string // benchctl version, for metadata
}

func (r BuildRequest) labels() map[string]string {
	return map[string]string{LabelKey: r.Key, "io.benchctl.manifest": r.Manifest}
}

// BuildError is a failed build (exit code 2): the failing step and the end of its log.
type BuildError struct {
	Builder    string
	Dockerfile string // its path, when known
	Step       string
	Tail       []string
	Err        error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	if e.Dockerfile != "" {
		fmt.Fprintf(&b, "build failed (%s builder, %s)", e.Builder, e.Dockerfile)
	} else {
		fmt.Fprintf(&b, "build failed (%s builder)", e.Builder)
	}
	if e.Step != "" {
		fmt.Fprintf(&b, " at %s", e.Step)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if len(e.Tail) > 0 {
		b.WriteString("\nlast lines of the build log:")
		for _, l := range e.Tail {
			b.WriteString("\n  | " + l)
		}
	}
	return b.String()
}

func (e *BuildError) Unwrap() error { return e.Err }

// ExitCode is 2, madengine's build failure code.
func (e *BuildError) ExitCode() int { return exitcode.Build }

// tail keeps the last n lines of a step's output. Past n lines the oldest stdout line goes
// first, so that what a failing command printed on stderr (its error, usually) survives the
// stdout that reached us after it: an engine forwards the two streams separately, in no
// fixed order. Stderr keeps at most half the tail.
type tail struct {
	n     int
	lines []string
	errs  []bool // lines[i] came from stderr
	nerr  int
	// head, when not 0, is how many of the first lines are kept besides the last n (a
	// builder that does not mark stderr: the reason may come early); firsts holds them and
	// skipped counts the lines between them and lines.
	head    int
	firsts  []string
	skipped int
}

// unmarkedHead is how many first lines of a step are kept where the builder does not say
// which lines are stderr.
const unmarkedHead = 10

// get is the tail to show: the first lines kept, a line saying how many were left out,
// and the last lines.
func (t *tail) get() []string {
	if len(t.firsts) == 0 {
		return t.lines
	}
	out := slices.Clone(t.firsts)
	if t.skipped > 0 {
		out = append(out, fmt.Sprintf("... (%d lines left out)", t.skipped))
	}
	return append(out, t.lines...)
}

// ansiRE matches terminal escape sequences (colours, cursor moves) a build step may print.
var ansiRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]`) })

func (t *tail) add(line string, stderr bool) {
	line = ansiRE().ReplaceAllString(line, "") // the tail is read in logs and messages, not on a terminal
	if len(t.firsts) < t.head {
		t.firsts = append(t.firsts, line)
		return
	}
	if t.head > 0 && len(t.lines) == t.n {
		t.skipped++
	}
	t.lines, t.errs = append(t.lines, line), append(t.errs, stderr)
	if stderr {
		t.nerr++
	}
	if len(t.lines) <= t.n {
		return
	}
	drop := 0
	if t.nerr <= t.n/2 {
		drop = slices.Index(t.errs, false)
	}
	if t.errs[drop] {
		t.nerr--
	}
	t.lines, t.errs = slices.Delete(t.lines, drop, drop+1), slices.Delete(t.errs, drop, drop+1)
}

func (t *tail) reset() {
	t.lines, t.errs, t.nerr, t.head, t.firsts, t.skipped = nil, nil, 0, 0, nil, 0
}
