package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/manifest"
)

// Every node resolves the manifest itself, and a manifest's models: section (a MAD
// checkout run with --tags, or models: in a manifest) may resolve to different benchmarks on
// different nodes: a get_models_json.py that lists what it finds on its node, or a checkout
// that differs between nodes. Before the image phase, rank 0 sends the digest of what it
// resolved (phase "catalog") and every other node compares it with its own and fails the job
// on a difference, naming both: the job runs rank 0's catalog or none.

// catalogPhase is the barrier phase that carries rank 0's catalog digest.
const catalogPhase = "catalog"

// catalogDigest is the digest of the benchmarks a job runs from a catalog: each one's name
// and its model's settings, but not where the catalog lies (a checkout may sit at another
// path on each node) nor a data set's measured size (rank 0 alone measures).
func catalogDigest(benches []manifest.Benchmark) string {
	type entry struct {
		Name  string
		Model *manifest.Model `json:",omitempty"`
	}
	list := make([]entry, 0, len(benches))
	for _, b := range benches {
		e := entry{Name: b.Name}
		if b.Model != nil {
			m := *b.Model
			m.File, m.Catalog, m.Line = "", "", 0
			m.DataSets = nil // Data names them; their sources are paths
			e.Model = &m
		}
		list = append(list, e)
	}
	b, err := json.Marshal(list)
	if err != nil { // a Model is plain data: cannot happen
		return "unknown:" + err.Error()
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// compareCatalog is nil when rank 0's digest (what it sent) is this node's, else the error
// that fails the job.
func compareCatalog(rank0 string, benches []manifest.Benchmark) error {
	mine := catalogDigest(benches)
	if rank0 == mine {
		return nil
	}
	names := make([]string, 0, len(benches))
	for _, b := range benches {
		names = append(names, b.Name)
	}
	list := strings.Join(names, ", ")
	if r := []rune(list); len(r) > 600 {
		list = string(r[:600]) + "…"
	}
	return fmt.Errorf("resolved other benchmarks from the models catalog than rank 0 did (rank 0's are %s, this node's %s: %d, %s): "+
		"a scripts/<dir>/get_models_json.py that lists different models on each node, or a checkout or catalog that differs between the nodes; "+
		"give every node the same checkout, and a generator whose list does not depend on the node", short(rank0), short(mine), len(benches), list)
}

// short is a digest cut for a message.
func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	if d == "" {
		return "(none)"
	}
	return d
}

// agreeOnCatalog: every node of a job whose manifest imports a catalog checks that it
// resolved rank 0's benchmarks (see above); a node that did not fails the job.
func (r *nodeRun) agreeOnCatalog(ctx context.Context, benches []manifest.Benchmark) error {
	if r.node.World == 1 || r.o.Manifest.Models == nil {
		return nil
	}
	data, err := r.phaseData(ctx, catalogPhase, map[string]string{"catalog": catalogDigest(benches)})
	if err != nil {
		return err
	}
	if err := compareCatalog(data["catalog"], benches); err != nil {
		r.fail(err, exitcode.Invalid)
		return err
	}
	return nil
}
