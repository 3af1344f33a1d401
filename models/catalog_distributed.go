package models

import (
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// distributed reads a model's "distributed" object as madengine reads it: launcher (its
// name lower-cased and trimmed, checked against madengine's list), sglang_disagg's
// prefill_nodes and decode_nodes, and primus's config_path, cli_extra and backend. The
// topology keys (nnodes, nproc_per_node, port, backend, ...) come from the job's nodes
// under benchctl: they are kept as metadata, with a warning.
func (c *Catalog) distributed(m *Model, v *document.Node, kp string, add addFunc) {
	if v.Kind == document.NullNode {
		return
	}
	if v.Kind != document.MapNode {
		add(v.Line, kp, "must be an object such as {\"launcher\": \"torchrun\"}, got %s", v.Kind)
		return
	}
	d := &manifest.Distributed{}
	for i, key := range v.Keys {
		val, fp := v.Items[i], kp+"."+document.Clip(key.Value)
		switch key.Value {
		case "launcher":
			if val.Kind == document.NullNode {
				continue
			}
			if val.Kind != document.ScalarNode {
				add(val.Line, fp, "must be a launcher name, got %s", val.Kind)
				continue
			}
			name := strings.ToLower(strings.TrimSpace(val.Value))
			if msg := manifest.LauncherProblem(name); msg != "" {
				add(val.Line, fp, "%s", msg)
				continue
			}
			m.Launcher, _ = manifest.CanonicalLauncher(name)
		case "sglang_disagg":
			for j, k := range keysOf(val) {
				n := val.Items[j]
				switch k.Value {
				case "prefill_nodes", "decode_nodes":
					x, err := strconv.Atoi(n.Value)
					if n.Kind != document.ScalarNode || err != nil || x < 1 || x > maxDisaggNodes {
						add(n.Line, fp+"."+k.Value, "must be a number of nodes from 1 to %d, got %s", maxDisaggNodes, document.Quote(n.Value))
					} else if k.Value == "prefill_nodes" {
						d.PrefillNodes = x
					} else {
						d.DecodeNodes = x
					}
				default:
					c.warn("%s:%d: %s.%s: unknown key ignored (sglang_disagg reads prefill_nodes and decode_nodes)", c.Path, k.Line, fp, document.Clip(k.Value))
				}
			}
			if (d.PrefillNodes == 0) != (d.DecodeNodes == 0) {
				add(val.Line, fp, "give both prefill_nodes and decode_nodes, or neither (madengine's default split)")
			}
		case "primus":
			for j, k := range keysOf(val) {
				n := val.Items[j]
				if n.Kind != document.ScalarNode {
					add(n.Line, fp+"."+document.Clip(k.Value), "must be a string, got %s", n.Kind)
					continue
				}
				switch k.Value {
				case "config_path":
					d.PrimusConfigPath = n.Value
				case "cli_extra":
					d.PrimusCLIExtra = n.Value
				case "backend":
					d.PrimusBackend = n.Value
				default:
					c.warn("%s:%d: %s.%s: unknown key ignored (primus reads config_path, cli_extra and backend)", c.Path, k.Line, fp, document.Clip(k.Value))
				}
			}
		default:
			if m.Extra == nil {
				m.Extra = map[string]string{}
			}
			m.Extra["distributed."+key.Value] = nodeJSON(val)
			c.warn("%s:%d: %s: kept as metadata: benchctl takes nodes, GPUs per node and the master's address and port from the job (srun, or submit --nodes)", c.Path, key.Line, fp)
		}
	}
	if *d != (manifest.Distributed{}) {
		m.Distributed = d
	}
}

// keysOf returns a mapping's keys (none for anything else: madengine ignores a
// sub-setting that is not an object).
func keysOf(n *document.Node) []*document.Node {
	if n == nil || n.Kind != document.MapNode {
		return nil
	}
	return n.Keys
}

// maxDisaggNodes bounds sglang_disagg's node counts: more than any allocation.
const maxDisaggNodes = 1 << 20
