package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/runner/gpupath"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/manifest"
)

// plannedGPUs is the GPU access a dry run plans with when this node cannot give the job its
// GPUs (a login node has none, or fewer than asked; why is the *GPUError): as many GPUs as
// gpu.count asks for, else as the most any selected MAD model's n_gpus asks for, numbered
// from 0. The node that runs the job selects the real ones (and their device files). It
// returns the plan's "gpus" lines and the one warning the dry run gives; an n_gpus above
// maxPlanned, which no node has, is a *GPUError.
func plannedGPUs(g manifest.GPU, benches []manifest.Benchmark, why error) (GPUAccess, []string, string, error) {
	n, asks := int(g.Count), "gpu.count asks"
	if n == 0 {
		for _, b := range benches {
			if b.Model == nil {
				continue
			}
			k, err := strconv.Atoi(strings.TrimSpace(b.Model.NGPUs))
			if err == nil && k > maxPlanned {
				return GPUAccess{}, nil, "", &GPUError{Msg: fmt.Sprintf("benchmark %s: n_gpus %d is more GPUs than a node has (at most %d)", b.Name, k, maxPlanned)}
			}
			if err == nil && k > n {
				n, asks = k, "n_gpus of "+b.Name+" asks"
			}
		}
	}
	vendor, title := g.Vendor, ""
	switch vendor {
	case gpu.VendorAMD:
		title = "AMD "
	case gpu.VendorNVIDIA:
		title = "NVIDIA "
	default: // auto: the vendor is the one the node that runs the job has
		vendor = manifest.VendorAuto
	}
	const runs = "(not this node's: the node that runs the job selects them)"
	if n == 0 {
		lines := []string{fmt.Sprintf("all of the node's %sGPUs, as gpu.count: all asks %s", title, runs)}
		return GPUAccess{Vendor: vendor}, lines, warnPlanned(why, "all the node's GPUs"), nil
	}
	planned := make([]gpu.GPU, n)
	for i := range planned {
		planned[i] = gpu.GPU{Index: i, NUMANode: -1}
	}
	acc, err := access(GPUAccess{Vendor: vendor, System: planned, planned: true}, planned)
	if err != nil {
		return GPUAccess{}, nil, "", err
	}
	lines := []string{fmt.Sprintf("%d %sGPUs, as %s %s", n, title, asks, runs)}
	for _, e := range acc.Env {
		lines = append(lines, e.Name+"="+e.Value)
	}
	return acc, lines, warnPlanned(why, fmt.Sprintf("the %d GPUs %s for", n, asks)), nil
}

// maxPlanned is the most GPUs a dry run plans for one node: gpu.count's bound.
const maxPlanned = 1024

func warnPlanned(why error, what string) string {
	return "dry run without this node's GPUs (" + why.Error() + "): the plan shows " + what + "; a run here would exit 4"
}

// planEngineGPUs gives the dry run's GPUs the devices this node's engine wants, as the run
// would (ForEngine), and says which way in the plan's gpus lines; it returns the same for a
// benchmark's share. Without an engine to ask, or for planned GPUs (a login node), the
// devices are those before the engine's say: the NVIDIA device request.
func planEngineGPUs(ctx context.Context, o Options, gpus *GPUAccess, p *PlanResult) (func(GPUAccess, manifest.Benchmark) (GPUAccess, error), error) {
	same := func(a GPUAccess, _ manifest.Benchmark) (GPUAccess, error) { return a, nil }
	if gpus.Vendor != gpu.VendorAMD && gpus.Vendor != gpu.VendorNVIDIA {
		return same, nil
	}
	if gpus.planned || o.Engine == nil { // planned GPUs: the node that runs the job decides
		return same, nil
	}
	eng, err := o.Engine()
	if err != nil {
		p.GPUs = append(p.GPUs, "devices: not asked of this node's engine ("+err.Error()+")")
		return same, nil
	}
	defer eng.Close()
	f, err := engineFacts(ctx, apiFacts{eng})
	if err != nil {
		p.GPUs = append(p.GPUs, "devices: not asked of this node's engine ("+err.Error()+")")
		return same, nil
	}
	specs := gpu.CDISpecs{}
	if gpus.Vendor == gpu.VendorNVIDIA {
		specs = gpupath.CDISpecsFor(f, o.SysfsRoot)
	}
	groups, whose := containerGroups(o.Manifest, nil)
	acc, path, err := gpus.ForEngine(f, specs, groups, whose)
	if err != nil {
		return nil, err
	}
	*gpus = acc
	p.GPUs = append(p.GPUs, "devices: "+path.Why)
	for _, l := range path.SpecLinks {
		p.GPUs = append(p.GPUs, "CDI spec "+l)
	}
	for _, sp := range path.SpecProblems {
		p.Warnings = append(p.Warnings, "CDI spec skipped: "+sp)
	}
	return func(a GPUAccess, b manifest.Benchmark) (GPUAccess, error) {
		groups, whose := containerGroups(o.Manifest, &b)
		a, _, err := a.ForEngine(f, specs, groups, whose)
		return a, err
	}, nil
}
