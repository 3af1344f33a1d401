package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

// A model's distributed settings as madengine reads them: launcher (lower-cased, trimmed,
// aliases), sglang_disagg's split and primus's settings reach the benchmark; the topology
// keys benchctl takes from the job are kept as metadata, with a warning.
func TestDistributedKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "models.json")
	os.WriteFile(p, []byte(`[
 {"name": "a", "scripts": "run.sh", "distributed": {"launcher": " DeepSpeed "}},
 {"name": "b", "scripts": "run.sh", "distributed": {"launcher": "sglang_disagg", "sglang_disagg": {"prefill_nodes": 2, "decode_nodes": 3}}},
 {"name": "p", "scripts": "run.sh", "distributed": {"launcher": "primus",
   "primus": {"config_path": "examples/x.yaml", "cli_extra": "--a 1", "backend": "megatron"},
   "nnodes": 2}},
 {"name": "d", "scripts": "run.sh"},
 {"name": "e", "scripts": "run.sh", "distributed": null}
]`), 0o644)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		launcher string
		d        *manifest.Distributed
	}{
		{"deepspeed", nil},
		{"sglang-disagg", &manifest.Distributed{PrefillNodes: 2, DecodeNodes: 3}},
		{"primus", &manifest.Distributed{PrimusConfigPath: "examples/x.yaml", PrimusCLIExtra: "--a 1", PrimusBackend: "megatron"}},
		{"", nil}, {"", nil},
	}
	for i, w := range want {
		b, err := c.Models[i].Benchmark(p)
		if err != nil || b.Launcher != w.launcher || (w.d == nil) != (b.Model.Distributed == nil) || (w.d != nil && *w.d != *b.Model.Distributed) {
			t.Errorf("%s: launcher %q %+v (%v), want %q %+v", c.Models[i].Name, b.Launcher, b.Model.Distributed, err, w.launcher, w.d)
		}
	}
	if c.Models[2].Extra["distributed.nnodes"] != "2" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "models.json:6: [2].distributed.nnodes: kept as metadata") {
		t.Errorf("extra %v warnings %q", c.Models[2].Extra, c.Warnings)
	}
}

// A bad distributed setting is an error at its line: an unknown launcher lists the allowed
// ones, slurm_multi says why benchctl cannot run it.
func TestBadDistributed(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{`"distributed": {"launcher": "openmpi"}`, `:2: [0].distributed.launcher: "openmpi" is not a launcher; allowed: torchrun, torchtitan, deepspeed, megatron-lm, primus, vllm, sglang, sglang-disagg, slurm_multi, mpirun, mpiexec`},
		{`"distributed": {"launcher": "slurm-multi"}`, `:2: [0].distributed.launcher: slurm_multi is madengine's escape hatch`},
		{`"distributed": {"launcher": ["torchrun"]}`, `:2: [0].distributed.launcher: must be a launcher name`},
		{`"distributed": "torchrun"`, `:2: [0].distributed: must be an object`},
		{`"distributed": {"launcher": "sglang-disagg", "sglang_disagg": {"prefill_nodes": 0, "decode_nodes": 2}}`, `[0].distributed.sglang_disagg.prefill_nodes: must be a number of nodes from 1`},
		{`"distributed": {"launcher": "sglang-disagg", "sglang_disagg": {"prefill_nodes": 2}}`, `[0].distributed.sglang_disagg: give both prefill_nodes and decode_nodes`},
		{`"distributed": {"primus": {"config_path": {"a": 1}}}`, `[0].distributed.primus.config_path: must be a string`},
	} {
		p := filepath.Join(t.TempDir(), "models.json")
		os.WriteFile(p, []byte("[\n {\"name\": \"a\", \"scripts\": \"run.sh\", "+c.entry+"}\n]"), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.entry, err, c.want)
		}
	}
}
