package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func tool(name string, cmd []string, pre, post []string, env ...manifest.EnvVar) manifest.Tool {
	t := manifest.Tool{Name: name, Cmd: cmd, Env: env}
	for _, p := range pre {
		t.Pre = append(t.Pre, manifest.ToolScript{Path: p})
	}
	for _, p := range post {
		t.Post = append(t.Post, manifest.ToolScript{Path: p})
	}
	return t
}

// The first tool is innermost, as madengine stacks them: cmd B before cmd A, B's pre scripts
// first, post scripts in the tools' order, a later tool's env winning; every tool's cmd is
// put, one already there too (madengine's apply_tools prepends each).
func TestToolsStackAsMadengine(t *testing.T) {
	a := tool("a", []string{"wrapA"}, []string{"preA.sh"}, []string{"postA.sh"}, manifest.EnvVar{Name: "X", Value: "a"})
	b := tool("b", []string{"wrapB", "--"}, []string{"preB.sh"}, []string{"postB.sh"}, manifest.EnvVar{Name: "X", Value: "b"})
	dup := tool("dup", []string{"wrapA"}, nil, nil)
	s := withTools(Spec{Name: "c", Command: []string{"bench", "1"}, Workdir: "/w"}, []manifest.Tool{a, b, dup})
	tr := s.Tools
	if got := []string{tr.Pre[0].Script.Path, tr.Pre[1].Script.Path, tr.Post[0].Script.Path, tr.Post[1].Script.Path}; strings.Join(got, " ") != "preB.sh preA.sh postA.sh postB.sh" {
		t.Errorf("order: %v", got)
	}
	if !strings.Contains(s.Command[2], "\n( trap - INT QUIT; exec wrapA wrapB -- wrapA \"${_bctl_a[@]}\" ) &\n") ||
		!strings.Contains(s.Command[2], "\n_bctl_a=(bench 1)\n") {
		t.Errorf("command line:\n%s", s.Command[2])
	}
	if env := toolEnv([]manifest.Tool{a, b}); env["X"].Value != "b" {
		t.Errorf("env %v", env)
	}
	// Only env_vars: the command as it is.
	e := withTools(Spec{Name: "c", Command: []string{"bench"}}, []manifest.Tool{tool("a", nil, nil, nil, manifest.EnvVar{Name: "X", Value: "a"})})
	if strings.Join(e.Command, " ") != "bench" || e.Tools.Wrapped {
		t.Errorf("env only: %q", e.Command)
	}
	// A cmd runs in the tools' directory, as madengine's in its run_directory: its relative
	// words are madengine's.
	r := withTools(Spec{Name: "c", Command: []string{"bash", "run.sh"}, Workdir: "/myworkspace"},
		[]manifest.Tool{tool("lib", []string{"python3", "../scripts/common/tools/get_library_trace.py"}, nil, nil)})
	if r.Command[0] != "bash" || !strings.Contains(r.Command[2], "exec python3 ../scripts/common/tools/get_library_trace.py \"${_bctl_a[@]}\"") || !r.Tools.Wrapped {
		t.Errorf("relative words: %q", r.Command)
	}
}

// Every word of the command is quoted in the script; only a shell tool's cmd is shell text.
func TestToolScriptQuotesEverything(t *testing.T) {
	evil := "$(touch pwned); `x` ' \" \n;|&"
	s := withTools(Spec{Name: "c", Command: []string{"echo", evil}},
		[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{{Path: "p'; x.sh", Args: []string{evil}}}}, {Name: "sh", Shell: true, ShellCmd: "echo outer &&"}})
	if len(s.Tools.Shell) != 1 || s.Command[0] != "bash" || s.Command[1] != "-c" {
		t.Fatalf("%q", s.Command)
	}
	if !strings.Contains(s.Command[2], "( trap - INT QUIT; echo outer && \"${_bctl_a[@]}\" ) &") || !strings.Contains(s.Command[2], "_bctl_a=(echo "+shellQuote(evil)+")") {
		t.Errorf("script:\n%s", s.Command[2])
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// Run it: the benchmark prints the evil word back, nothing is executed from it.
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(dir, "p'; x.sh"), []byte("echo pre-ran \"$1\"\n"), 0o755)
	s = withTools(Spec{Name: "c", Command: []string{"echo", evil}, Workdir: dir},
		[]manifest.Tool{{Name: "p", Pre: []manifest.ToolScript{{Path: "p'; x.sh", Args: []string{evil}}}, Post: []manifest.ToolScript{{Path: "missing.sh"}}}})
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "BENCHCTL_OUTPUT_DIR="+out)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "pre-ran "+evil) || !strings.Contains(string(b), evil+"\n") {
		t.Fatalf("err %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("a word was run as a command")
	}
	w := &toolWatch{tr: s.Tools}
	w.Write(b)
	f, cmdFailed := w.failed()
	if f != "tool p: post_scripts missing.sh could not be copied to "+s.Tools.Dir || cmdFailed {
		t.Errorf("watch: %q %v\n%s", f, cmdFailed, b)
	}
	if _, err := os.Stat(filepath.Join(out, "run_directory", "p'; x.sh")); err != nil {
		t.Errorf("the tools' directory is not kept in the output folder: %v", err)
	}
}

// A marker line without the run's token, naming a step the plan does not have, or a long
// line, names nothing.
func TestToolWatchOnlyItsSteps(t *testing.T) {
	tr := &toolRun{Names: []string{"a"}, Pre: []toolStep{{Tool: "a", Kind: "pre_scripts", Script: manifest.ToolScript{Path: "p.sh", Args: []string{"x"}}}}, marker: toolMarker + "t0k: "}
	w := &toolWatch{tr: tr}
	w.Write([]byte("benchctl-tools: pre 0 exit 1\n" + toolMarker + "other: pre 0 exit 2\n" + tr.marker + "pre 7 exit 1\n" + tr.marker + "post 0 exit 1\n" +
		tr.marker + "pre 0 exit\n" + tr.marker + "pre 0 copy 1\n" + tr.marker + strings.Repeat("x", 6000) + "\n" + tr.marker + "pre 0 exit 3\n"))
	if f, _ := w.failed(); f != "tool a: pre_scripts p.sh x exited 3, so the benchmark did not run" {
		t.Errorf("%q", f)
	}
	res := toolOutcome(execResult{Outcome: "failure", Err: errString("exited with code 3")}, w)
	if !strings.HasPrefix(res.Err.Error(), "tool a: pre_scripts p.sh x exited 3") {
		t.Errorf("%v", res.Err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// A tool's secret variable is *** in the dry run's line of the tool and in the container's
// printed command, and reaches the container's environment as it is.
func TestToolSecretEnvRedactedInPlan(t *testing.T) {
	tl := manifest.Tool{Name: "p", File: "tools.json", Line: 2, Env: []manifest.EnvVar{{Name: "HF_TOKEN", Value: "hf_live_value", Secret: true}, {Name: "X", Value: "y"}}}
	if got := PlanTools([]manifest.Tool{tl}); len(got) != 1 || strings.Contains(got[0], "hf_live_value") || !strings.Contains(got[0], "env HF_TOKEN=***; env X=y") {
		t.Errorf("%q", got)
	}
	s := BuildSpec(&manifest.Manifest{ToolDefs: []manifest.Tool{tl}}, manifest.Benchmark{Name: "b", Command: []string{"x"}}, Node{}, "img", "", "/r", GPUAccess{}, nil)
	if run := s.DockerRun(); strings.Contains(run, "hf_live_value") {
		t.Errorf("%s", run)
	}
	for _, e := range s.Env {
		if e.Name == "HF_TOKEN" && (e.Value != "hf_live_value" || !e.Secret) {
			t.Errorf("%+v", e)
		}
	}
}
