package runner

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/benchctl/benchctl/manifest"
)

// Tools (madengine's profilers and tracers, manifest.Tool) wrap a benchmark as madengine
// stacks them: the first tool is innermost. Each tool's cmd goes before the command (the
// last tool's outermost; every tool's, as madengine's apply_tools, also one a former tool
// put there), its pre_scripts run before the command (the last tool's first), its
// post_scripts after it in the tools' order, and its env_vars reach the container (a later
// tool's win).
//
// madengine runs `cd run_directory && CMD bash run.sh ARGS` and each script in that same
// model directory, run_directory under the working directory (/myworkspace), after copying
// it there. benchctl's tools' directory is run_directory-<container> under the benchmark's
// working directory (one per node and run: a MAD checkout is shared by every node), or
// $BENCHCTL_OUTPUT_DIR/run_directory for a benchmark without one. The command line and the
// scripts run there, so a tool's relative paths (rpd's ./rocmProfileData, rocprofv3's
// ./rocprof_output, ../scripts/common/tools/...) are madengine's; a word of the benchmark's
// command that names a file or folder of the working directory is made absolute from it, so
// that it names what it names without tools. What is in the directory at the end is moved
// to $BENCHCTL_OUTPUT_DIR/run_directory, so that it stays in the node's folder (and from the
// host after the container ended, when its script could not: rescueToolsDir).
//
// The command runs through `bash -c` with a script benchctl writes, as madengine runs
// everything with bash: every word of a cmd, a script's path and args and the command is
// quoted; only a cmd of a tool that says "shell": true is shell text. Tools with only
// env_vars leave the command as it is.

// ToolScriptTimeout bounds each pre or post script, as madengine's 600 s.
const ToolScriptTimeout = 600

// ToolStopGrace is how long a benchmark with post scripts gets, after its timeout's SIGTERM,
// to run them before the container is killed.
const ToolStopGrace = 60

// toolMarker starts the lines the tools' script prints when a step of a tool fails, then
// a token of the run (toolRun.marker): "benchctl-tools-0f3a…: pre 2 exit 1" (the plan's
// step 2). The benchmark does not know the token, so it cannot print a marker of its own.
const toolMarker = "benchctl-tools-"

// toolStep is one script of the wrapped command, for naming a failed one.
type toolStep struct {
	Tool   string
	Kind   string // pre_scripts or post_scripts
	Script manifest.ToolScript
}

// toolRun is how a benchmark's container runs its tools.
type toolRun struct {
	Names    []string   // the tools, in the order given
	Pre      []toolStep // in the order they run
	Post     []toolStep
	Shell    []string // tools run through bash -c because they say "shell": true
	Dir      string   // the tools' directory
	Wrapped  bool     // the command runs through the tools' bash -c script
	HasPost  bool
	Timeout  int    // each script's bound in seconds
	marker   string // toolMarker and this run's token, then ": "
	original []string
	base     string // where the tools' scripts' paths are relative to; "": the working directory
	inPlace  bool   // the command runs in its own folder (a MAD model's run directory): its words stay as they are
}

// toolEnv is the tools' env_vars, a later tool's winning.
func toolEnv(tools []manifest.Tool) map[string]manifest.EnvVar {
	env := map[string]manifest.EnvVar{}
	for _, t := range tools {
		for _, e := range t.Env {
			env[e.Name] = e
		}
	}
	return env
}

// withTools wraps the spec's command with the tools.
func withTools(s Spec, tools []manifest.Tool) Spec {
	return withToolsTimeout(s, tools, ToolScriptTimeout)
}

// withToolsTimeout is withTools whose scripts are bounded to timeout seconds each.
func withToolsTimeout(s Spec, tools []manifest.Tool, timeout int) Spec {
	if len(tools) == 0 {
		return s
	}
	tr := &toolRun{original: s.Command, Timeout: timeout, marker: toolMarker + toolToken() + ": "}
	tr.Dir = path.Join(cmp.Or(s.Output, OutputDir), "run_directory")
	switch {
	case s.Workspace != "" && s.Workdir != s.Workspace:
		// A MAD model in its run directory: the tools run there too, as madengine runs
		// them, and their scripts' paths are relative to the workspace (/myworkspace).
		tr.Dir, tr.base, tr.inPlace = s.Workdir, s.Workspace, true
	case s.Workdir != "":
		tr.Dir = path.Join(s.Workdir, "run_directory-"+s.Name)
	}
	// Stack as madengine: pre scripts of a later tool first, post scripts in order, each
	// cmd before what is there.
	var line []string // outermost first
	for _, t := range tools {
		tr.Names = append(tr.Names, t.Name)
		var pre []toolStep
		for _, sc := range t.Pre {
			pre = append(pre, toolStep{t.Name, "pre_scripts", sc})
		}
		tr.Pre = append(pre, tr.Pre...)
		for _, sc := range t.Post {
			tr.Post = append(tr.Post, toolStep{t.Name, "post_scripts", sc})
		}
		switch {
		case t.Shell && t.ShellCmd != "":
			tr.Shell = append(tr.Shell, t.Name)
			line = append([]string{t.ShellCmd}, line...)
		case len(t.Cmd) > 0:
			words := make([]string, len(t.Cmd))
			for i, w := range t.Cmd {
				words[i] = shellQuote(w)
			}
			line = append([]string{strings.Join(words, " ")}, line...)
		}
	}
	tr.HasPost = len(tr.Post) > 0
	tr.Wrapped = len(line) > 0 || len(tr.Pre) > 0 || tr.HasPost
	s.Tools = tr
	if !tr.Wrapped {
		return s
	}
	base := s.Workdir
	if tr.base != "" {
		base = tr.base
	}
	s.Command = []string{"bash", "-c", toolScript(tr, base, s.Command, strings.Join(line, " ")), "benchctl-tools"}
	return s
}

// toolToken is a run's random token for its markers.
func toolToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// toolVars are the script's variables; none is exported to the benchmark, whatever its
// environment has.
var toolVars = "_bctl_D _bctl_W _bctl_O _bctl_M _bctl_a _bctl_i _bctl_w _bctl_c _bctl_rc _bctl_r _bctl_pr"

// toolScript is the bash script that runs the tools' scripts around the command: prefix is
// the tools' cmds (quoted words, or a shell tool's text), command the benchmark's words.
func toolScript(tr *toolRun, workdir string, command []string, prefix string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	if workdir == "" {
		workdir = "."
	}
	words := make([]string, len(command))
	for i, c := range command {
		words[i] = shellQuote(c)
	}
	w("# benchctl: the tools %s around the benchmark's command", strings.Join(tr.Names, ", "))
	w("export -n %s 2>/dev/null", toolVars)
	w(`_bctl_W=$(cd %s && pwd) || exit 125`, shellQuote(workdir))
	w(`_bctl_D=%s; _bctl_O="$BENCHCTL_OUTPUT_DIR"; _bctl_M=%s`, shellQuote(tr.Dir), shellQuote(tr.marker))
	w(`case $_bctl_D in /*) ;; *) _bctl_D=$_bctl_W/$_bctl_D ;; esac`)
	// Each marker starts a line of its own, whatever the output before it.
	w(`_bctl_mark() { printf '\n%%s%%s\n' "$_bctl_M" "$*" >&2; }`)
	// _bctl_step KIND INDEX PATH ARGS: copy the script to the directory and run it there.
	w(`_bctl_step() { local k=$1 i=$2 p=$3 src n r t; shift 3; case $p in /*) src=$p ;; *) src=$_bctl_W/$p ;; esac`)
	w(`  cp -LR -- "$src" "$_bctl_D"/ || { _bctl_mark "$k $i copy"; return 126; }`)
	w(`  n=${p##*/}; t=$SECONDS`)
	w(`  if command -v timeout >/dev/null 2>&1; then (cd "$_bctl_D" && exec timeout %d bash ./"$n" "$@"); else (cd "$_bctl_D" && exec bash ./"$n" "$@"); fi; r=$?`, tr.Timeout)
	w(`  if [ $r -eq 124 ] && [ $((SECONDS - t)) -ge %d ]; then _bctl_mark "$k $i timeout"; elif [ $r -ne 0 ]; then _bctl_mark "$k $i exit $r"; fi`, tr.Timeout)
	w(`  return $r; }`)
	w(`_bctl_keep() { cd "$_bctl_W" || return; if [ "$_bctl_D" != "$_bctl_O/run_directory" ] && [ -d "$_bctl_D" ]; then`)
	w(`  if [ -e "$_bctl_O/run_directory" ]; then cp -R "$_bctl_D"/. "$_bctl_O/run_directory"/ && rm -rf "$_bctl_D"; else mv -- "$_bctl_D" "$_bctl_O/run_directory"; fi; fi; }`)
	w(`_bctl_post() { _bctl_pr=0`)
	for i, st := range tr.Post {
		w(`  _bctl_step post %d %s || _bctl_pr=$?`, i, scriptWords(st.Script))
	}
	w(`  _bctl_keep; return $_bctl_pr; }`)
	w(`mkdir -p "$_bctl_D" || { _bctl_mark "setup 0 exit 1"; exit 125; }`)
	for i, st := range tr.Pre {
		w(`_bctl_step pre %d %s || { _bctl_r=$?; _bctl_keep; exit $_bctl_r; }`, i, scriptWords(st.Script))
	}
	// The benchmark's words that name a file or folder of the working directory (the first
	// only when it is a path) are made absolute from it: the command runs in the directory.
	w(`_bctl_a=(%s)`, strings.Join(words, " "))
	if !tr.inPlace {
		w(`for _bctl_i in "${!_bctl_a[@]}"; do _bctl_w=${_bctl_a[_bctl_i]}; case $_bctl_w in ''|/*|-*) continue ;; esac`)
		w(`  if [ "$_bctl_i" -eq 0 ] && [[ $_bctl_w != */* ]]; then continue; fi`)
		w(`  if [ -e "$_bctl_W/$_bctl_w" ]; then _bctl_a[_bctl_i]=$_bctl_W/$_bctl_w; fi; done`)
	}
	w(`cd "$_bctl_D" || { _bctl_mark "setup 0 exit 1"; exit 125; }`)
	// An asynchronous command of a non-interactive shell starts with SIGINT and SIGQUIT
	// ignored; bash lets its subshell put them back before the command starts.
	exec := "exec "
	if len(tr.Shell) > 0 {
		exec = "" // shell text: the subshell runs it
	}
	w(`( trap - INT QUIT; %s%s "${_bctl_a[@]}" ) &`, exec, prefix)
	w(`_bctl_c=$!; trap 'kill -TERM $_bctl_c 2>/dev/null' TERM INT`)
	w(`wait $_bctl_c; _bctl_rc=$?; while kill -0 $_bctl_c 2>/dev/null; do wait $_bctl_c; _bctl_rc=$?; done; trap - TERM INT`)
	w(`if [ $_bctl_rc -ne 0 ]; then _bctl_mark "command 0 exit $_bctl_rc"; fi`)
	w(`_bctl_post; _bctl_pr=$?`)
	w(`if [ $_bctl_rc -ne 0 ]; then exit $_bctl_rc; fi; exit $_bctl_pr`)
	return b.String()
}

// scriptWords is a script's path and args, each quoted.
func scriptWords(s manifest.ToolScript) string {
	words := []string{shellQuote(s.Path)}
	for _, a := range s.Args {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// PlanTools describes each tool for the dry run, in the order given: where it is defined,
// its cmd as words (or, for a shell tool, that it runs through bash -c), its scripts with
// their args and its variables.
func PlanTools(tools []manifest.Tool) []string {
	var out []string
	for _, t := range tools {
		var b strings.Builder
		if t.Line > 0 {
			fmt.Fprintf(&b, "%s (%s:%d)", t.Name, t.File, t.Line)
		} else { // the context's own scripts (manifest.ContextToolName)
			fmt.Fprintf(&b, "%s (%s)", t.Name, t.File)
		}
		switch {
		case t.Shell && t.ShellCmd != "":
			fmt.Fprintf(&b, "; cmd through bash -c (\"shell\": true): %s", t.ShellCmd)
		case len(t.Cmd) > 0:
			words := make([]string, len(t.Cmd))
			for i, w := range t.Cmd {
				words[i] = shellQuote(w)
			}
			fmt.Fprintf(&b, "; cmd: %s", strings.Join(words, " "))
		}
		for _, sc := range t.Pre {
			fmt.Fprintf(&b, "; pre_scripts: bash %s", scriptWords(sc))
		}
		for _, sc := range t.Post {
			fmt.Fprintf(&b, "; post_scripts: bash %s", scriptWords(sc))
		}
		for _, e := range t.Env {
			v := shellQuote(e.Value)
			if e.Secret {
				v = manifest.Redacted
			}
			fmt.Fprintf(&b, "; env %s=%s", e.Name, v)
		}
		out = append(out, b.String())
	}
	return out
}
