package models

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

func writeTools(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolsMalformedGiveFileAndLine(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"syntax", "{\n \"tools\": {\n  \"a\": {,}\n }\n}", "tools.json:3"},
		{"not object", "[1]", `tools.json:1: must be a JSON object`},
		{"top key", "{\"tools\": {},\n \"extra\": 1}", `tools.json:2: extra: is not a key of a tools.json`},
		{"no tools", "{}", `has no "tools" object`},
		{"bad name", "{\"tools\": {\n\"a b\": {}}}", `tools.json:2: tools: "a b" is not a tool name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadTools(context.Background(), writeTools(t, t.TempDir(), tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestToolEntryChecks(t *testing.T) {
	body := `{"tools": {
"unknown": {"cmd": "x", "profile": true},
"op": {"cmd": "echo cmd_A && "},
"pipe": {"cmd": "tracer | tee"},
"sub": {"cmd": "run $(which x)"},
"redir": {"cmd": "tracer > out"},
"tick": {"cmd": "a ` + "`b`" + `"},
"shellok": {"cmd": "echo cmd_A && ", "shell": true},
"quoted": {"cmd": "tracer '--sep=a|b' \"x;y\""},
"argsop": {"pre_scripts": [{"path": "p.sh", "args": "a; rm -rf /"}]},
"nopath": {"post_scripts": [{"args": "x"}]},
"env": {"env_vars": {"1X": "y"}}
}}`
	tf, err := LoadTools(context.Background(), writeTools(t, t.TempDir(), body))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"unknown": `tools.json:2: tools.unknown.profile: is not a key of a tool (it has cmd, env_vars, post_scripts, pre_scripts, shell)`,
		"op":      `tools.json:3: tools.op.cmd: tool op: "echo cmd_A && " needs a shell (it has the operator &&)`,
		"pipe":    `operator |)`,
		"sub":     `operator $()`,
		"redir":   `operator >)`,
		"tick":    "operator `)",
		"argsop":  `tools.argsop.pre_scripts[0].args: "a; rm -rf /" needs a shell (it has the operator ;)`,
		"nopath":  `tools.nopath.post_scripts[0].path: is required`,
		"env":     `"1X" is not a variable name`,
	} {
		if _, err := tf.Tool(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
	sh, err := tf.Tool("shellok")
	if err != nil || !sh.Shell || sh.ShellCmd != "echo cmd_A &&" {
		t.Errorf("shell: %+v %v", sh, err)
	}
	q, err := tf.Tool("quoted")
	if err != nil || strings.Join(q.Cmd, "|") != "tracer|--sep=a|b|x;y" {
		t.Errorf("quoted: %q %v", q.Cmd, err)
	}
}

func TestToolsHugeAndFIFOBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(MaxToolsSize + 1)
	f.Close()
	if _, err := LoadTools(context.Background(), big); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("huge: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := LoadTools(context.Background(), fifo); err == nil || !strings.Contains(err.Error(), "not a tools.json file") {
		t.Errorf("fifo: %v", err)
	}
}

func TestApplyToolsSourcesAndUnknown(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "mad", "scripts", "common"), 0o755)
	os.WriteFile(filepath.Join(dir, "mad", "scripts", "common", "tools.json"), []byte(`{"tools": {"rpd": {"cmd": "checkout"}, "mine": {"cmd": "checkout"}}}`), 0o644)
	writeTools(t, dir, `{"tools": {"mine": {"cmd": "beside"}}}`)
	extra := filepath.Join(dir, "extra.json")
	os.WriteFile(extra, []byte(`{"tools": {"flag": {"cmd": "fromflag"}}}`), 0o644)
	m := &manifest.Manifest{Path: filepath.Join(dir, "m.yaml"), Models: &manifest.Models{Catalog: "mad/models.json"}, Tools: []string{"mine", "rpd"}}
	if err := ApplyTools(context.Background(), m, ToolOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(m.ToolDefs) != 2 || m.ToolDefs[0].Cmd[0] != "beside" || m.ToolDefs[1].Cmd[0] != "checkout" {
		t.Fatalf("%+v", m.ToolDefs)
	}
	err := ApplyTools(context.Background(), m, ToolOptions{Names: []string{"flag,nosuch"}, File: extra})
	if err == nil || !strings.Contains(err.Error(), `"nosuch" is not a known tool; known: flag (`+extra+`), mine (`+filepath.Join(dir, "tools.json")+`)`) {
		t.Fatalf("unknown: %v", err)
	}
	var me *document.Error
	if !errorsAs(err, &me) {
		t.Fatalf("not invalid input: %T", err)
	}
	if err := ApplyTools(context.Background(), m, ToolOptions{Names: []string{}}); err != nil || len(m.ToolDefs) != 0 {
		t.Fatalf("--tools '' should clear: %v %+v", err, m.ToolDefs)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

// A tool's env_vars are checked as the manifest's env: a variable benchctl sets is refused
// (file and line), a credential-like one is secret: *** in the manifest's redacted copy
// (job.json) and in the dry run's line of the tool.
func TestToolEnvChecksAsManifestEnv(t *testing.T) {
	tf, err := LoadTools(context.Background(), writeTools(t, t.TempDir(), `{"tools": {
"reserved": {"env_vars": {"NODE_RANK": "3"}},
"out": {"env_vars": {"BENCHCTL_OUTPUT_DIR": "/tmp"}},
"cred": {"env_vars": {"HF_TOKEN": "hf_live_value", "TOKENIZERS_PARALLELISM": "false"}}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"reserved": `tools.json:2: tools.reserved.env_vars.NODE_RANK: is set by benchctl on every node`,
		"out":      `tools.json:3: tools.out.env_vars.BENCHCTL_OUTPUT_DIR: is set by benchctl on every node`,
	} {
		if _, err := tf.Tool(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
	c, err := tf.Tool("cred")
	if err != nil || len(c.Env) != 2 || !c.Env[0].Secret || c.Env[1].Secret {
		t.Fatalf("%+v %v", c.Env, err)
	}
	m := &manifest.Manifest{ToolDefs: []manifest.Tool{c}}
	if out, _ := json.Marshal(m.Redacted()); strings.Contains(string(out), "hf_live_value") || !strings.Contains(string(out), "false") {
		t.Errorf("redacted: %s", out)
	}
	if m.ToolDefs[0].Env[0].Value != "hf_live_value" {
		t.Error("Redacted changed the manifest")
	}
}
