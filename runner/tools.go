package runner

import (
	"fmt"
	"path"
	"strings"

	"github.com/benchctl/benchctl/manifest"
)

// Tools (madengine's profilers and tracers, manifest.Tool) wrap a benchmark as madengine
// stacks them: the first tool is innermost. Each tool's cmd goes before the command (the
// last tool's outermost; a cmd a former tool already put there is not put twice), its
// pre_scripts run before the command (the last tool's first), its post_scripts after it in
// the tools' order, and its env_vars reach the container (a later tool's win).
//
// madengine runs a tool's scripts in its model directory, run_directory under the working
// directory (/myworkspace), after copying each there; its cmd words that start with ./ or
// ../ name paths from there. benchctl's tools' directory is run_directory-<container> under
// the benchmark's working directory (one per node and run: a MAD checkout is shared by
// every node), or $BENCHCTL_OUTPUT_DIR/run_directory for a benchmark without one; ./ and
// ../ words of a cmd are made absolute from it. What is left in it is moved to
// $BENCHCTL_OUTPUT_DIR/run_directory at the end, so that it stays in the node's folder.
//
// Without scripts or a shell tool the command stays in exec form: the cmd words, then the
// benchmark's. Otherwise it runs through `sh -c` with a script benchctl writes, in which
// every word of a cmd, a script's path and args and the command is quoted; only a cmd of a
// tool that says "shell": true is shell text.

// ToolScriptTimeout bounds each pre or post script, as madengine's 600 s.
const ToolScriptTimeout = 600

// ToolStopGrace is how long a benchmark with post scripts gets, after its timeout's SIGTERM,
// to run them before the container is killed.
const ToolStopGrace = 60

// toolMarker starts the lines the tools' script prints when a step of a tool fails:
// "benchctl-tools: pre 2 exit 1" (the plan's step 2).
const toolMarker = "benchctl-tools: "

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
	Shell    []string // tools run through sh -c because they say "shell": true
	Dir      string   // the tools' directory
	Wrapped  bool     // the command runs through the tools' sh -c script
	HasPost  bool
	original []string
}

// toolEnv is the tools' env_vars, a later tool's winning.
func toolEnv(tools []manifest.Tool) map[string]string {
	env := map[string]string{}
	for _, t := range tools {
		for _, e := range t.Env {
			env[e.Name] = e.Value
		}
	}
	return env
}

// withTools wraps the spec's command with the tools.
func withTools(s Spec, tools []manifest.Tool) Spec {
	if len(tools) == 0 {
		return s
	}
	tr := &toolRun{original: s.Command}
	tr.Dir = path.Join(OutputDir, "run_directory")
	if s.Workdir != "" {
		tr.Dir = path.Join(s.Workdir, "run_directory-"+s.Name)
	}
	// Stack as madengine: pre scripts of a later tool first, post scripts in order, each
	// cmd before what is there (a cmd already there is not put again).
	type part struct {
		words []string
		shell string
	}
	var parts []part // outermost first
	seen := map[string]bool{}
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
		if !t.HasCommand() {
			continue
		}
		key := t.ShellCmd + "\x00" + strings.Join(t.Cmd, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		if t.Shell {
			tr.Shell = append(tr.Shell, t.Name)
			parts = append([]part{{shell: t.ShellCmd}}, parts...)
			continue
		}
		words := make([]string, len(t.Cmd))
		for i, w := range t.Cmd {
			words[i] = w
			if strings.HasPrefix(w, "./") || strings.HasPrefix(w, "../") {
				words[i] = path.Join(tr.Dir, w)
				if strings.HasPrefix(words[i], tr.Dir+"/") {
					tr.Wrapped = true // a path in the directory: it must be made
				}
			}
		}
		parts = append([]part{{words: words}}, parts...)
	}
	tr.HasPost = len(tr.Post) > 0
	if len(tr.Pre) > 0 || tr.HasPost || len(tr.Shell) > 0 {
		tr.Wrapped = true
	}
	if !tr.Wrapped {
		var cmd []string
		for _, p := range parts {
			cmd = append(cmd, p.words...)
		}
		s.Command = append(cmd, s.Command...)
		s.Tools = tr
		return s
	}
	var line []string
	for _, p := range parts {
		if p.shell != "" {
			line = append(line, p.shell)
			continue
		}
		for _, w := range p.words {
			line = append(line, shellQuote(w))
		}
	}
	for _, w := range s.Command {
		line = append(line, shellQuote(w))
	}
	s.Command = []string{"sh", "-c", toolScript(tr, s.Workdir, strings.Join(line, " ")), "benchctl-tools"}
	s.Tools = tr
	return s
}

// toolScript is the sh script that runs the tools' scripts around the command line.
func toolScript(tr *toolRun, workdir, line string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	if workdir == "" {
		workdir = "."
	}
	w("# benchctl: the tools %s around the benchmark's command", strings.Join(tr.Names, ", "))
	w("D=%s; W=%s; O=\"$BENCHCTL_OUTPUT_DIR\"", shellQuote(tr.Dir), shellQuote(workdir))
	w(`step() { s=$1; shift; p=$1; shift; case $p in /*) src=$p ;; *) src=$W/$p ;; esac`)
	w(`  cp -LR -- "$src" "$D"/ || return 126; n=${p##*/}`)
	w(`  if command -v timeout >/dev/null 2>&1; then (cd "$D" && exec timeout "$s" bash "$n" "$@"); else (cd "$D" && exec bash "$n" "$@"); fi; }`)
	w(`keep() { if [ "$D" != "$O/run_directory" ] && [ -d "$D" ]; then mkdir -p "$O/run_directory" && cp -R "$D"/. "$O/run_directory"/ && rm -rf "$D"; fi; }`)
	w(`post() { pr=0`)
	for i, st := range tr.Post {
		w(`  step %d %s || { r=$?; echo "%spost %d exit $r" >&2; pr=$r; }`, ToolScriptTimeout, scriptWords(st.Script), toolMarker, i)
	}
	w(`  keep; return $pr; }`)
	w(`mkdir -p "$D" || { echo "%ssetup 0 exit 1" >&2; exit 125; }`, toolMarker)
	for i, st := range tr.Pre {
		w(`step %d %s || { r=$?; echo "%spre %d exit $r" >&2; keep; exit $r; }`, ToolScriptTimeout, scriptWords(st.Script), toolMarker, i)
	}
	w(`cd "$W" || exit 125`)
	w(`%s &`, line)
	w(`c=$!; trap 'kill -TERM $c 2>/dev/null' TERM INT`)
	w(`wait $c; rc=$?; while kill -0 $c 2>/dev/null; do wait $c; rc=$?; done; trap - TERM INT`)
	w(`if [ $rc -ne 0 ]; then echo "%scommand 0 exit $rc" >&2; fi`, toolMarker)
	w(`post; pr=$?`)
	w(`if [ $rc -ne 0 ]; then exit $rc; fi; exit $pr`)
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
// its cmd as words (or, for a shell tool, that it runs through sh -c), its scripts with
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
			fmt.Fprintf(&b, "; cmd through sh -c (\"shell\": true): %s", t.ShellCmd)
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
			fmt.Fprintf(&b, "; env %s=%s", e.Name, shellQuote(e.Value))
		}
		out = append(out, b.String())
	}
	return out
}
