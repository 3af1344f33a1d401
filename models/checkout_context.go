package models

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// madContext is madengine's --additional-context, checked: what a checkout run maps onto
// the manifest it stands for.
type madContext struct {
	label     string // "--context" or "--context-file F": where its problems are
	vendor    string // lower-case; "" = auto
	guestOS   string
	env       map[string]string
	buildArgs map[string]string
	mounts    []ctxMount            // in the order written
	count     string                // gpu.count from docker_gpus: "" (not given), "all" or a number
	logScan   map[string]any        // the manifest's logScan from the log_error_* keys; nil: not given
	tools     *manifest.ToolContext // tools, pre_scripts, post_scripts, encapsulate_script; nil: none
	toolNames []string              // the tools named, in the order given
}

type ctxMount struct{ target, source string }

// maxKeyLen bounds a context key: a container path is at most PATH_MAX.
const maxKeyLen = 4096

// contextHints say what to use instead of madengine keys that benchctl does differently.
var contextHints = map[string]string{
	"timeout":            `each model's timeout is its models.json "timeout" (seconds; default 2h): set it there`,
	"timeout_multiplier": `each model's timeout is its models.json "timeout" (seconds; default 2h): set it there`,
	"slurm":              "use `benchctl submit` flags (--nodes, --partition, --account, --qos, --time, --gpus-per-node, --exclusive, --sbatch-arg), or slurm: in a manifest",
	"multi_node_args":    "benchctl sets MAD_MULTI_NODE_RUNNER, NODE_RANK, NNODES, MASTER_ADDR and MASTER_PORT itself: run `srun --ntasks-per-node=1 benchctl run ...` in an allocation, or `benchctl submit --nodes N`",
	"distributed":        "name the launcher in the model's models.json entry (\"distributed\": {\"launcher\": \"deepspeed\"}) or a manifest's launcher: field; benchctl builds MAD_MULTI_NODE_RUNNER and the launcher's variables from the job's nodes",
	"docker_cpus":        "benchctl does not pin containers to CPUs",
	"MAD_CONTAINER_IMAGE": "to run every model on one existing image, write a manifest with image: {ref: ...} " +
		"and models: {catalog: models.json} (docs/migrating-from-madengine.md)",
}

const acceptedKeys = "gpu_vendor, guest_os, docker_env_vars, docker_mounts, docker_build_arg, docker_gpus, log_error_pattern_scan, log_error_patterns, log_error_benign_patterns, tools, pre_scripts, post_scripts, encapsulate_script"

// readContext reads and checks --context or --context-file; every problem of the context
// is reported together, as an invalid-input *document.Error.
func readContext(o CheckoutOptions) (*madContext, error) {
	c := &madContext{label: "--context"}
	var data []byte
	switch {
	case o.Context != "" && o.ContextFile != "":
		return nil, inputError("--context", "give --context or --context-file, not both")
	case o.Context != "":
		data = []byte(o.Context)
	case o.ContextFile != "":
		c.label = "--context-file " + o.ContextFile
		var err error
		if data, err = safefile.ReadFile(o.ContextFile, manifest.MaxFileSize); err != nil {
			return nil, inputError(c.label, "%s", fileProblem(err))
		}
	default:
		return c, nil
	}
	root, err := document.Parse("context.json", data)
	if err != nil {
		var pe *document.ParseError
		if !errors.As(err, &pe) || pe.Line == 0 {
			msg := err.Error()
			if pe != nil {
				msg = pe.Msg
			}
			return nil, inputError(c.label, "%s", msg)
		}
		if pe.Col == 0 { // the end of the input, or too deep: no column
			return nil, inputError(c.label, "line %d: %s", pe.Line, pe.Msg)
		}
		return nil, inputError(c.label, "line %d, column %d (byte offset %d): %s", pe.Line, pe.Col, byteOffset(data, pe.Line, pe.Col), pe.Msg)
	}
	if root.Kind != document.MapNode {
		return nil, inputError(c.label, `must be a JSON object of madengine context keys ({"gpu_vendor": "AMD", ...}), got %s`, describe(root))
	}
	var ps []document.Problem
	bad := func(p, format string, args ...any) {
		ps = append(ps, document.Problem{File: c.label, Path: p, Msg: fmt.Sprintf(format, args...)})
	}
	for i, k := range root.Keys {
		key, v := k.Value, root.Items[i]
		if len(key) > maxKeyLen {
			bad(short(key), "a key of %d bytes is too long (at most %d)", len(key), maxKeyLen)
			continue
		}
		switch key {
		case "gpu_vendor":
			s, ok := text(v)
			switch l := strings.ToLower(s); {
			case ok && (l == manifest.VendorAMD || l == manifest.VendorNVIDIA || l == manifest.VendorNone || l == manifest.VendorAuto):
				c.vendor = l
			default:
				bad(key, `must be "AMD" or "NVIDIA" (or "none", "auto"), got %s`, describe(v))
			}
		case "guest_os":
			if s, ok := text(v); ok && s != "" && !strings.ContainsAny(s, " \t\n") {
				c.guestOS = s
			} else {
				bad(key, `must be a guest OS such as "UBUNTU" or "CENTOS" (matched against each Dockerfile's CONTEXT line), got %s`, describe(v))
			}
		case "docker_env_vars", "docker_build_arg", "docker_mounts":
			if v.Kind != document.MapNode {
				bad(key, "must be an object of %s, got %s", map[string]string{"docker_env_vars": "NAME: value",
					"docker_build_arg": "NAME: value", "docker_mounts": "container path: host path"}[key], describe(v))
				continue
			}
			vals := map[string]string{}
			for j, kk := range v.Keys {
				name, fp := kk.Value, key+"."+short(kk.Value)
				if len(name) > maxKeyLen {
					bad(fp, "a key of %d bytes is too long (at most %d)", len(name), maxKeyLen)
					continue
				}
				s, ok := text(v.Items[j])
				if !ok {
					bad(fp, "must be a string, got %s", describe(v.Items[j]))
					continue
				}
				if key != "docker_mounts" {
					vals[name] = s
					continue
				}
				tgt := path.Clean(name)
				if s == "" {
					bad(fp, "the host path is empty")
					continue
				}
				if tgt == Workspace {
					bad(fp, "%s is where benchctl mounts the MAD checkout, as madengine does: mount elsewhere", Workspace)
					continue
				}
				if prev, dup := vals[tgt]; dup {
					bad(fp, "%s is already mounted from %s: one container path needs one host path", tgt, prev)
					continue
				}
				vals[tgt] = s
				c.mounts = append(c.mounts, ctxMount{target: name, source: s})
			}
			if key == "docker_env_vars" {
				c.env = vals
			} else if key == "docker_build_arg" {
				c.buildArgs = vals
			}
		case "docker_gpus":
			s, ok := text(v)
			if !ok {
				bad(key, `must be "all" or GPU indices ("0,1,2", "0-3"), got %s`, describe(v))
				continue
			}
			n, err := gpuCount(s)
			if err != nil {
				bad(key, "%v", err)
				continue
			}
			c.count = n
		case "log_error_pattern_scan", "log_error_patterns", "log_error_benign_patterns":
			c.logKey(key, v, bad)
		case "tools", "pre_scripts", "post_scripts", "encapsulate_script":
			c.toolKey(key, v, bad)
		default:
			if hint, ok := contextHints[key]; ok {
				bad(key, "is not supported: %s", hint)
			} else {
				bad(short(key), "unknown key (benchctl accepts %s)", acceptedKeys)
			}
		}
	}
	if len(ps) > 0 {
		return nil, &document.Error{File: c.label, Kind: "input", Problems: ps}
	}
	return c, nil
}

// text is a scalar's text: a string, or a number as written.
func text(n *document.Node) (string, bool) {
	if n.Kind != document.ScalarNode || (n.Tag != document.TagStr && n.Tag != document.TagInt && n.Tag != document.TagFloat) {
		return "", false
	}
	return n.Value, true
}

// describe says what a JSON value is, for "must be X, got Y".
func describe(n *document.Node) string {
	switch {
	case n.Kind == document.MapNode:
		return "an object"
	case n.Kind == document.SeqNode:
		return "a list"
	case n.Kind == document.NullNode:
		return "null"
	case n.Tag == document.TagStr:
		return "the string " + strconv.Quote(short(n.Value))
	case n.Tag == document.TagBool:
		return "the boolean " + n.Value + ` (write it in quotes: "` + n.Value + `")`
	}
	return "the number " + short(n.Value)
}

// short shortens a user's key or value for a message.
func short(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:60]) + "…"
	}
	return s
}

// byteOffset turns a 1-based line and column back into a 0-based byte offset.
func byteOffset(data []byte, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return off + col - 1
}

// fileProblem says why a context file cannot be read.
func fileProblem(err error) string {
	var nr *safefile.NotRegularError
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no such file"
	case errors.As(err, &nr):
		return "is " + nr.What + ", not a file: give a JSON file"
	case errors.As(err, &tl):
		return fmt.Sprintf("is larger than %d MiB; a context is a small JSON object", manifest.MaxFileSize>>20)
	}
	return fmt.Sprintf("cannot read: %v", err)
}

// inputError is one problem with a flag or its value (exit 4).
func inputError(where, format string, args ...any) error {
	return &document.Error{File: where, Kind: "input", Problems: []document.Problem{{File: where, Msg: fmt.Sprintf(format, args...)}}}
}
