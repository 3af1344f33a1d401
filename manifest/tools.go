package manifest

import (
	"regexp"
	"sync"

	"github.com/benchctl/benchctl/manifest/document"
)

// Tool is one profiler or tracer a job wraps its benchmarks with: an entry of madengine's
// tools.json (scripts/common/tools.json in a MAD checkout), resolved and checked.
type Tool struct {
	Name string `json:"name"`
	File string `json:"file"` // the tools.json it came from
	Line int    `json:"line"` // its line there
	// Cmd is the prefix put before the benchmark's command, split into words (exec form).
	Cmd []string `json:"cmd,omitempty"`
	// Shell is the tool's `"shell": true`: ShellCmd is then shell text, run through bash -c
	// before the benchmark's command (whose words are quoted).
	Shell    bool   `json:"shell,omitempty"`
	ShellCmd string `json:"shellCmd,omitempty"`
	// Env is the tool's env_vars, sorted by name.
	Env []EnvVar `json:"env,omitempty"`
	// Pre and Post are the tool's pre_scripts and post_scripts, in the file's order.
	Pre  []ToolScript `json:"pre,omitempty"`
	Post []ToolScript `json:"post,omitempty"`
}

// ToolScript is one of a tool's pre_scripts or post_scripts: a bash script, its path
// relative to the working directory (madengine's /myworkspace), and its args split into
// words.
type ToolScript struct {
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
}

// HasCommand says whether the tool puts anything before the benchmark's command.
func (t Tool) HasCommand() bool { return len(t.Cmd) > 0 || t.ShellCmd != "" }

var toolNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$`) })

// ValidToolName says whether s can name a tool: letters, digits, '.', '_', '+' and '-',
// starting with a letter or digit, at most 100.
func ValidToolName(s string) bool { return toolNameRE().MatchString(s) }

// tools checks the manifest's tool names: each valid, none twice.
func (r *resolver) tools(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for i, n := range names {
		fp := document.Index("tools", i)
		switch {
		case !ValidToolName(n):
			r.p.Add(fp, "%s is not a tool name (letters, digits, '.', '_', '+', '-'; a tool of the MAD checkout's scripts/common/tools.json, of a tools.json beside the manifest, or of --tools-file)", document.Quote(n))
		case seen[n]:
			r.p.Add(fp, "%s is listed twice", document.Quote(n))
		default:
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// ValidEnvName says whether s can name an environment variable.
func ValidEnvName(s string) bool { return envNameRE().MatchString(s) }

// ContextToolName names the tool that a MAD checkout run's context makes of its own
// pre_scripts, post_scripts and encapsulate_script (ToolContext). It is not a tool name a
// tools.json can have.
const ContextToolName = "--context"

// ToolContext is what a MAD checkout run's --context (madengine's additional context) says
// of tools: Overrides change the cmd or env_vars of the tools it names (madengine's
// {"name": ..., "cmd": ..., "env_vars": {...}}); Pre, Post and Encapsulate are its own
// pre_scripts, post_scripts and encapsulate_script (as words), run as the innermost tool,
// ContextToolName, as madengine runs them.
type ToolContext struct {
	Overrides   []ToolOverride
	Pre, Post   []ToolScript
	Encapsulate []string
}

// ToolOverride is a context's change to a named tool: its cmd (as written: shell text for a
// tool with "shell": true, else words) when Cmd is not nil, and variables added or replaced.
type ToolOverride struct {
	Name string
	Cmd  *string
	Env  []EnvVar
}
