package models

import (
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// madengine's context keys for tools: "tools" ([{"name": N, "cmd": ..., "env_vars":
// {...}}]: tools of the checkout's scripts/common/tools.json, in the order they stack, with
// their cmd or variables changed), "pre_scripts" and "post_scripts" (lists like a tool's),
// and "encapsulate_script" (words put before each model's command). madengine runs the
// context's pre_scripts after the tools' and its post_scripts before theirs, and its
// encapsulate_script innermost: the same as a first tool of its own, which is what
// models.ApplyTools makes of them (manifest.ContextToolName).

// toolKey reads one of the context's tool keys into c.tools (and c.toolNames).
func (c *madContext) toolKey(key string, v *document.Node, bad func(p, format string, args ...any)) {
	if c.tools == nil {
		c.tools = &manifest.ToolContext{}
	}
	add := func(_ int, p, format string, args ...any) { bad(p, format, args...) }
	switch key {
	case "pre_scripts":
		c.tools.Pre = toolScripts(v, key, add)
	case "post_scripts":
		c.tools.Post = toolScripts(v, key, add)
	case "encapsulate_script":
		s, ok := v.Value, v.Kind == document.ScalarNode && v.Tag == document.TagStr
		if !ok {
			bad(key, "must be a string (the words put before each model's command), got %s", describe(v))
			return
		}
		words, msg := execWords(s)
		if msg != "" {
			bad(key, "%s: benchctl puts it before each model's command as words, without a shell; "+
				"put the steps in a script it runs, or in a tool of your own with \"shell\": true in a tools.json (--tools-file FILE, --tools NAME)", msg)
			return
		}
		c.tools.Encapsulate = words
	case "tools":
		c.contextTools(v, bad)
	}
}

// contextTools reads the context's "tools" list.
func (c *madContext) contextTools(v *document.Node, bad func(p, format string, args ...any)) {
	if v.Kind != document.SeqNode {
		bad("tools", `must be a list of tools ([{"name": "rocprofv3"}]), got %s`, describe(v))
		return
	}
	seen := map[string]bool{}
	for i, it := range v.Items {
		fp := fmt.Sprintf("tools[%d]", i)
		if it.Kind != document.MapNode {
			bad(fp, `must be {"name": ...} (and "cmd", "env_vars" to change the tool's), got %s`, describe(it))
			continue
		}
		o := manifest.ToolOverride{}
		for j, k := range it.Keys {
			x, kp := it.Items[j], fp+"."+short(k.Value)
			switch k.Value {
			case "name":
				s, ok := x.Value, x.Kind == document.ScalarNode && x.Tag == document.TagStr
				if !ok || !manifest.ValidToolName(s) {
					bad(kp, "must be the name of a tool of the checkout's %s (letters, digits, '.', '_', '+', '-'), got %s", ToolsJSON, describe(x))
					continue
				}
				o.Name = s
			case "cmd":
				s, ok := x.Value, x.Kind == document.ScalarNode && x.Tag == document.TagStr
				if !ok {
					bad(kp, "must be a string (the tool's cmd), got %s", describe(x))
					continue
				}
				o.Cmd = &s
			case "env_vars":
				if x.Kind != document.MapNode {
					bad(kp, "must be an object of NAME: value, got %s", describe(x))
					continue
				}
				for n, ek := range x.Keys {
					s, ok := text(x.Items[n])
					switch {
					case !manifest.ValidEnvName(ek.Value):
						bad(kp, "%s is not a variable name", document.Quote(short(ek.Value)))
					case !ok:
						bad(kp+"."+ek.Value, "must be a string, got %s", describe(x.Items[n]))
					default:
						o.Env = append(o.Env, manifest.EnvVar{Name: ek.Value, Value: s})
					}
				}
			default:
				bad(kp, "is not a key of a context's tool (it has name, cmd, env_vars)")
			}
		}
		switch {
		case o.Name == "":
			if it.Get("name") == nil {
				bad(fp+".name", "is required: the tool's name in the checkout's %s", ToolsJSON)
			}
		case seen[o.Name]:
			bad(fp+".name", "%s is named twice", document.Quote(o.Name))
		default:
			seen[o.Name] = true
			c.toolNames = append(c.toolNames, o.Name)
			if o.Cmd != nil || len(o.Env) > 0 {
				c.tools.Overrides = append(c.tools.Overrides, o)
			}
		}
	}
}

// applyOverrides changes the tools the context names (their cmd, their variables).
func applyOverrides(tools []manifest.Tool, tc *manifest.ToolContext) error {
	e := &document.Error{File: "--context", Kind: "input"}
	for _, o := range tc.Overrides {
		for i := range tools {
			t := &tools[i]
			if t.Name != o.Name {
				continue
			}
			if o.Cmd != nil {
				t.Cmd, t.ShellCmd = nil, ""
				if t.Shell {
					t.ShellCmd = strings.TrimSpace(*o.Cmd)
				} else if words, msg := execWords(*o.Cmd); msg != "" {
					e.Add(document.Problem{File: "--context", Path: "tools." + o.Name + ".cmd", Msg: fmt.Sprintf("tool %s: %s: benchctl puts a tool's cmd before the benchmark's command as words, without a shell; move the steps into a script the cmd runs, or give the tool \"shell\": true in its tools.json", o.Name, msg)})
				} else {
					t.Cmd = words
				}
			}
			for _, ev := range o.Env {
				t.Env = setEnv(t.Env, ev)
			}
		}
	}
	if len(e.Problems) > 0 {
		return e
	}
	return nil
}

// setEnv sets a variable in a list sorted by name.
func setEnv(env []manifest.EnvVar, v manifest.EnvVar) []manifest.EnvVar {
	for i := range env {
		if env[i].Name == v.Name {
			env[i].Value = v.Value
			return env
		}
		if env[i].Name > v.Name {
			return append(env[:i], append([]manifest.EnvVar{v}, env[i:]...)...)
		}
	}
	return append(env, v)
}

// contextTool is the tool the context's own scripts make, or nil.
func contextTool(tc *manifest.ToolContext) *manifest.Tool {
	if tc == nil || (len(tc.Pre) == 0 && len(tc.Post) == 0 && len(tc.Encapsulate) == 0) {
		return nil
	}
	return &manifest.Tool{Name: manifest.ContextToolName, File: "--context", Pre: tc.Pre, Post: tc.Post, Cmd: tc.Encapsulate}
}
