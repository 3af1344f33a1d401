package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// madengine's tools (profilers and tracers) come from a tools.json: {"tools": {NAME:
// {"pre_scripts": [{"path", "args"}], "cmd", "env_vars", "post_scripts"}}}. benchctl reads
// the same file, adds one key of its own ("shell": true) and applies the tools as
// madengine stacks them; runner turns them into the container's command.

// MaxToolsSize bounds a tools.json (madengine's is 9 KB).
const MaxToolsSize = 4 << 20

// ToolsJSON is where a MAD checkout keeps its tools, relative to the checkout.
const ToolsJSON = "scripts/common/tools.json"

// toolKeys are the keys of a tool entry.
var toolKeys = []string{"cmd", "env_vars", "post_scripts", "pre_scripts", "shell"}

// ToolsFile is one parsed tools.json: each tool's entry, unchecked until selected.
type ToolsFile struct {
	Path  string
	Names []string                  // in the file's order
	raw   map[string]*document.Node // name -> entry
}

// LoadTools reads a tools.json. The file must be a JSON object whose "tools" is an object of
// tool entries; its entries are checked when selected (Select), so that an entry a run does
// not use cannot stop it. A FIFO, a link to one or a file over MaxToolsSize is refused.
func LoadTools(ctx context.Context, path string) (*ToolsFile, error) {
	f, err := safefile.Open(path)
	if err != nil {
		var nr *safefile.NotRegularError
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, toolsError(path, 0, "", "no such file")
		case errors.As(err, &nr):
			return nil, toolsError(path, 0, "", "is "+nr.What+", not a tools.json file")
		}
		return nil, toolsError(path, 0, "", fmt.Sprintf("cannot read: %v", err))
	}
	defer f.Close()
	data, err := document.ReadLimited(f, MaxToolsSize)
	if err != nil {
		return nil, toolsError(path, 0, "", fmt.Sprintf("cannot read: %v", err))
	}
	if len(data) > MaxToolsSize {
		return nil, toolsError(path, 0, "", fmt.Sprintf("is larger than %d MiB", MaxToolsSize>>20))
	}
	root, err := document.ParseContext(ctx, "tools.json", data)
	if err != nil {
		var pe *document.ParseError
		if errors.As(err, &pe) {
			return nil, toolsError(path, pe.Line, "", pe.Msg)
		}
		return nil, err
	}
	if root.Kind != document.MapNode {
		return nil, toolsError(path, root.Line, "", fmt.Sprintf(`must be a JSON object {"tools": {NAME: {...}}}, got %s`, root.Kind))
	}
	tf := &ToolsFile{Path: path, raw: map[string]*document.Node{}}
	e := &document.Error{File: path, Kind: "tools.json"}
	for i, k := range root.Keys {
		if k.Value != "tools" {
			e.Add(document.Problem{File: path, Line: k.Line, Path: k.Value, Msg: `is not a key of a tools.json (it has "tools")`})
			continue
		}
		tools := root.Items[i]
		if tools.Kind != document.MapNode {
			e.Add(document.Problem{File: path, Line: tools.Line, Path: "tools", Msg: fmt.Sprintf("must be an object of tools by name, got %s", tools.Kind)})
			continue
		}
		for j, name := range tools.Keys {
			if !manifest.ValidToolName(name.Value) {
				e.Add(document.Problem{File: path, Line: name.Line, Path: "tools", Msg: fmt.Sprintf("%s is not a tool name (letters, digits, '.', '_', '+', '-')", document.Quote(name.Value))})
				continue
			}
			tf.Names = append(tf.Names, name.Value)
			tf.raw[name.Value] = tools.Items[j]
		}
	}
	if root.Get("tools") == nil && len(e.Problems) == 0 {
		e.Add(document.Problem{File: path, Line: root.Line, Msg: `has no "tools" object`})
	}
	if len(e.Problems) > 0 {
		return nil, e
	}
	return tf, nil
}

func toolsError(path string, line int, fp, msg string) error {
	return &document.Error{File: path, Kind: "tools.json", Problems: []document.Problem{{File: path, Line: line, Path: fp, Msg: msg}}}
}

// Tool checks and returns the tool name of the file.
func (tf *ToolsFile) Tool(name string) (manifest.Tool, error) {
	n := tf.raw[name]
	fp := "tools." + name
	t := manifest.Tool{Name: name, File: tf.Path, Line: n.Line}
	e := &document.Error{File: tf.Path, Kind: "tools.json"}
	add := func(line int, p, format string, args ...any) {
		e.Add(document.Problem{File: tf.Path, Line: line, Path: p, Msg: fmt.Sprintf(format, args...)})
	}
	if n.Kind != document.MapNode {
		add(n.Line, fp, "must be an object (cmd, env_vars, pre_scripts, post_scripts), got %s", n.Kind)
		return t, e
	}
	if s := n.Get("shell"); s != nil {
		if s.Kind != document.ScalarNode || s.Tag != document.TagBool {
			add(s.Line, fp+".shell", "must be true or false")
		} else {
			t.Shell = s.Value == "true"
		}
	}
	for i, k := range n.Keys {
		v, kp := n.Items[i], fp+"."+k.Value
		switch k.Value {
		case "shell":
		case "cmd":
			if v.Kind == document.NullNode {
				continue
			}
			if v.Kind != document.ScalarNode || v.Tag != document.TagStr {
				add(v.Line, kp, "must be a string (the words put before the benchmark's command), got %s", v.Kind)
				continue
			}
			if t.Shell {
				t.ShellCmd = strings.TrimSpace(v.Value)
				continue
			}
			words, msg := execWords(v.Value)
			if msg != "" {
				add(v.Line, kp, "tool %s: %s: benchctl puts a tool's cmd before the benchmark's command as words, without a shell; move the steps into a script the cmd runs, or give the tool \"shell\": true to run it through bash -c", name, msg)
				continue
			}
			t.Cmd = words
		case "env_vars":
			if v.Kind == document.NullNode {
				continue
			}
			if v.Kind != document.MapNode {
				add(v.Line, kp, "must be an object of variables, got %s", v.Kind)
				continue
			}
			for j, ek := range v.Keys {
				ev := v.Items[j]
				switch {
				case !manifest.ValidEnvName(ek.Value):
					add(ek.Line, kp, "%s is not a variable name", document.Quote(ek.Value))
				case slices.Contains(manifest.Reserved, ek.Value):
					add(ek.Line, kp+"."+ek.Value, "is set by benchctl on every node (reserved: %s)", strings.Join(manifest.Reserved, ", "))
				case ev.Kind != document.ScalarNode:
					add(ev.Line, kp+"."+ek.Value, "must be a string, got %s", ev.Kind)
				default:
					// A credential-like name is secret, as in the manifest's env: *** wherever
					// benchctl prints or stores it.
					t.Env = append(t.Env, manifest.EnvVar{Name: ek.Value, Value: ev.Value, Secret: manifest.CredentialLike(ek.Value)})
				}
			}
			sort.SliceStable(t.Env, func(a, b int) bool { return t.Env[a].Name < t.Env[b].Name })
		case "pre_scripts", "post_scripts":
			scripts := toolScripts(v, kp, add)
			if k.Value == "pre_scripts" {
				t.Pre = scripts
			} else {
				t.Post = scripts
			}
		default:
			add(k.Line, kp, "is not a key of a tool (it has %s)", strings.Join(toolKeys, ", "))
		}
	}
	if len(e.Problems) > 0 {
		return t, e
	}
	return t, nil
}

// toolScripts reads a pre_scripts or post_scripts list: [{"path": ..., "args": ...}].
func toolScripts(v *document.Node, fp string, add func(int, string, string, ...any)) []manifest.ToolScript {
	if v.Kind == document.NullNode {
		return nil
	}
	if v.Kind != document.SeqNode {
		add(v.Line, fp, `must be a list of {"path": ..., "args": ...}, got %s`, v.Kind)
		return nil
	}
	var out []manifest.ToolScript
	for i, it := range v.Items {
		ip := fmt.Sprintf("%s[%d]", fp, i)
		if it.Kind != document.MapNode {
			add(it.Line, ip, `must be {"path": ..., "args": ...}, got %s`, it.Kind)
			continue
		}
		var s manifest.ToolScript
		ok := true
		for j, k := range it.Keys {
			x := it.Items[j]
			switch k.Value {
			case "path":
				p := x.Value
				if x.Kind != document.ScalarNode || strings.TrimSpace(p) == "" || strings.ContainsAny(p, "\x00\n\r") {
					add(x.Line, ip+".path", "must be the script's path (relative to the working directory, as madengine's /myworkspace)")
					ok = false
					continue
				}
				s.Path = strings.TrimSpace(p)
			case "args":
				if x.Kind != document.ScalarNode {
					add(x.Line, ip+".args", "must be a string of arguments, got %s", x.Kind)
					ok = false
					continue
				}
				words, msg := execWords(x.Value)
				if msg != "" {
					add(x.Line, ip+".args", "%s: benchctl passes a script's args as words, without a shell", msg)
					ok = false
					continue
				}
				s.Args = words
			default:
				add(k.Line, ip+"."+k.Value, "is not a key of a script (it has path, args)")
				ok = false
			}
		}
		if s.Path == "" && ok {
			add(it.Line, ip+".path", "is required: the script's path")
			ok = false
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}
