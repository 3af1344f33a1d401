package models

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// checkoutWithTools copies the MAD fixture and gives it a scripts/common/tools.json.
func checkoutWithTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-R", madFixture+"/.", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(dir, "scripts", "common"), 0o755)
	body := `{"tools": {
"rocprofv3": {"cmd": "rocprofv3 --kernel-trace --", "env_vars": {"A": "1", "C": "3"}, "pre_scripts": [{"path": "scripts/common/pre_scripts/rp.sh"}], "post_scripts": [{"path": "scripts/common/post_scripts/rp.sh", "args": "done"}]},
"rpd": {"cmd": "runTracer.sh"},
"sh": {"cmd": "a && b", "shell": true}
}}`
	if err := os.WriteFile(filepath.Join(dir, "scripts", "common", "tools.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func contextRun(t *testing.T, dir, ctx string, names []string) (*manifest.Manifest, error) {
	t.Helper()
	m, _, err := CheckoutManifest(CheckoutOptions{Dir: dir, Tags: []string{"echo_infer"}, Context: ctx})
	if err != nil {
		return nil, err
	}
	return m, ApplyTools(context.Background(), m, ToolOptions{Names: names})
}

// madengine's --context '{"tools": [{"name": ...}]}' takes the tools from the checkout's
// scripts/common/tools.json in the order given, with a context's cmd or env_vars replacing
// the tool's; the context's own pre_scripts, post_scripts and encapsulate_script run as the
// innermost tool (its pre after the tools', its post before theirs, as madengine does).
func TestContextTools(t *testing.T) {
	dir := checkoutWithTools(t)
	m, err := contextRun(t, dir, `{"gpu_vendor": "AMD", "tools": [{"name": "rocprofv3", "env_vars": {"B": "2", "C": "x"}}, {"name": "rpd", "cmd": "rpd2 --x"}],
 "pre_scripts": [{"path": "scripts/common/pre_scripts/mine.sh", "args": "a 'b c'"}], "post_scripts": [{"path": "p.sh"}], "encapsulate_script": "numactl --interleave=all"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Tools, ",") != "rocprofv3,rpd" {
		t.Errorf("tools %q", m.Tools)
	}
	var names []string
	for _, d := range m.ToolDefs {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "--context,rocprofv3,rpd" {
		t.Fatalf("tool defs %q", names)
	}
	c, rp, rpd := m.ToolDefs[0], m.ToolDefs[1], m.ToolDefs[2]
	if strings.Join(c.Cmd, " ") != "numactl --interleave=all" || len(c.Pre) != 1 || strings.Join(c.Pre[0].Args, "|") != "a|b c" || len(c.Post) != 1 || c.Post[0].Path != "p.sh" {
		t.Errorf("the context's tool %+v", c)
	}
	if got := rp.Env; len(got) != 3 || got[0] != (manifest.EnvVar{Name: "A", Value: "1"}) || got[1] != (manifest.EnvVar{Name: "B", Value: "2"}) || got[2] != (manifest.EnvVar{Name: "C", Value: "x"}) {
		t.Errorf("rocprofv3's env %+v", got)
	}
	if strings.Join(rp.Cmd, " ") != "rocprofv3 --kernel-trace --" || strings.Join(rpd.Cmd, " ") != "rpd2 --x" {
		t.Errorf("cmds %q %q", rp.Cmd, rpd.Cmd)
	}
	// --tools replaces the context's tools; its own scripts stay.
	m, err = contextRun(t, dir, `{"gpu_vendor": "AMD", "tools": [{"name": "rocprofv3"}], "post_scripts": [{"path": "p.sh"}]}`, []string{"rpd"})
	if err != nil || len(m.ToolDefs) != 2 || m.ToolDefs[0].Name != "--context" || m.ToolDefs[1].Name != "rpd" {
		t.Fatalf("%v %+v", err, m)
	}
	// Only scripts, no tools.
	m, err = contextRun(t, dir, `{"gpu_vendor": "AMD", "pre_scripts": [{"path": "x.sh"}]}`, nil)
	if err != nil || len(m.ToolDefs) != 1 || len(m.Tools) != 0 {
		t.Fatalf("%v %+v", err, m)
	}
	// A shell tool's cmd replaced is shell text.
	m, err = contextRun(t, dir, `{"gpu_vendor": "AMD", "tools": [{"name": "sh", "cmd": "x || y"}]}`, nil)
	if err != nil || m.ToolDefs[0].ShellCmd != "x || y" {
		t.Fatalf("%v %+v", err, m.ToolDefs)
	}
}

func TestContextToolsMalformed(t *testing.T) {
	dir := checkoutWithTools(t)
	amd := `"gpu_vendor": "AMD", `
	for _, c := range []struct{ name, ctx, want string }{
		{"not a list", `{` + amd + `"tools": {"name": "rpd"}}`, `--context: tools: must be a list of tools ([{"name": "rocprofv3"}]), got an object`},
		{"a string item", `{` + amd + `"tools": ["rpd"]}`, `--context: tools[0]: must be {"name": ...}`},
		{"no name", `{` + amd + `"tools": [{"cmd": "x"}]}`, `--context: tools[0].name: is required`},
		{"bad name", `{` + amd + `"tools": [{"name": "a b"}]}`, `--context: tools[0].name: must be the name of a tool`},
		{"twice", `{` + amd + `"tools": [{"name": "rpd"}, {"name": "rpd"}]}`, `--context: tools[1].name: "rpd" is named twice`},
		{"unknown key", `{` + amd + `"tools": [{"name": "rpd", "profile": 1}]}`, `--context: tools[0].profile: is not a key of a context's tool (it has name, cmd, env_vars)`},
		{"bad env", `{` + amd + `"tools": [{"name": "rpd", "env_vars": {"1X": "y"}}]}`, `tools[0].env_vars: "1X" is not a variable name`},
		{"env not strings", `{` + amd + `"tools": [{"name": "rpd", "env_vars": {"X": []}}]}`, `tools[0].env_vars.X: must be a string, got a list`},
		{"unknown tool", `{` + amd + `"tools": [{"name": "nosuch"}]}`, `"nosuch" is not a known tool; known: rocprofv3 (` + filepath.Join(dir, "scripts/common/tools.json") + `)`},
		{"cmd needing a shell", `{` + amd + `"tools": [{"name": "rpd", "cmd": "a; b"}]}`, `--context: tools.rpd.cmd: tool rpd: "a; b" needs a shell (it has the operator ;)`},
		{"pre_scripts not a list", `{` + amd + `"pre_scripts": "x.sh"}`, `--context: pre_scripts: must be a list of {"path": ..., "args": ...}, got a scalar`},
		{"a script without a path", `{` + amd + `"post_scripts": [{"args": "x"}]}`, `--context: post_scripts[0].path: is required`},
		{"script args with a shell operator", `{` + amd + `"pre_scripts": [{"path": "x.sh", "args": "a && rm -rf /"}]}`, `pre_scripts[0].args: "a && rm -rf /" needs a shell`},
		{"encapsulate with a shell operator", `{` + amd + `"encapsulate_script": "cd /x && perf record"}`, `--context: encapsulate_script: "cd /x && perf record" needs a shell (it has the operator &&): benchctl puts it before each model's command as words, without a shell`},
		{"encapsulate not a string", `{` + amd + `"encapsulate_script": ["a"]}`, `--context: encapsulate_script: must be a string`},
		{"encapsulate with a variable", `{` + amd + `"encapsulate_script": "run $HOME"}`, `needs a shell (it has the operator $ (a variable expansion))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := contextRun(t, dir, c.ctx, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
		})
	}
}

// A long context list of tools (thousands) is read, each checked, without blowing up.
func TestContextToolsMany(t *testing.T) {
	dir := checkoutWithTools(t)
	var b strings.Builder
	b.WriteString(`{"gpu_vendor": "AMD", "tools": [`)
	for i := range 5000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"name": "t` + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + `"}`)
	}
	b.WriteString(`]}`)
	_, err := contextRun(t, dir, b.String(), nil)
	if err == nil || !strings.Contains(err.Error(), "is named twice") {
		t.Fatalf("%v", err)
	}
}
