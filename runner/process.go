package runner

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchctl/benchctl/runner/enginefacts"

	"github.com/benchctl/benchctl/internal/timeline"
	"github.com/benchctl/benchctl/runner/workspace"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/workload/process"
)

// processes makes this node's run ready for the process runtime (runtime: process): no
// engine and no image phase (the GPUs were given by the visibility variables); what an earlier
// attempt left ended; the node record; then every node waits for the others, as after an
// image phase, so that the first benchmark starts together. done removes the runtime's own
// folder of the processes' output once the run has copied it into the node folder.
func (r *nodeRun) processes(ctx context.Context, gpus *nodeGPUs) (*distribution.Images, func(), error) {
	end := r.st.Phase(jobdir.PhaseImage)
	dir, err := os.MkdirTemp("", "benchctl-processes-")
	if err != nil {
		r.fail(err, exitcode.Failure)
		end(err)
		return nil, nil, err
	}
	done := func() { os.RemoveAll(dir) }
	rt, err := process.New(dir)
	if err != nil {
		done()
		r.fail(err, exitcode.Failure)
		end(err)
		return nil, nil, err
	}
	r.rt = rt
	facts, ferr := rt.Facts(ctx)
	r.facts = enginefacts.Known(facts, ferr)
	r.engine = image.Identity{Kind: manifest.RuntimeProcess, Name: facts.Name, Version: facts.Version}
	r.jobMu.Lock()
	r.fullEngine = &r.engine // job.json's engine: the process runtime, the kernel's version
	r.jobMu.Unlock()
	r.log.Info("runtime", "kind", manifest.RuntimeProcess, "kernel", facts.Version)
	r.removeLeftovers(ctx, r.rt)
	timeline.Mark("runtime")
	record := r.gatherNodeRecord(ctx, gpus, true)
	timeline.Mark("node record gathered")
	go r.tel.Start(ctx)
	imgs := distribution.Named(r.o.Manifest.Images(r.benches))
	if r.node.Rank == 0 {
		if err := r.writeJob(imgs.List()); err != nil {
			done()
			end(err)
			return nil, nil, err
		}
	}
	if err := r.phase(ctx, "processes", nil); err != nil {
		done()
		end(err)
		return nil, nil, err
	}
	timeline.Mark("processes phase")
	r.writeNodeRecord(ctx, nil, record, imgs, nil)
	end(nil)
	return imgs, done, nil
}

// forProcess gives the node's GPUs and each benchmark's share to processes (ForProcess).
func (g *nodeGPUs) forProcess() {
	g.GPUAccess = g.GPUAccess.ForProcess()
	for i := range g.access {
		g.access[i] = g.access[i].ForProcess()
	}
}

// ForProcess is the access for the process runtime: a process sees the node's devices, so
// it gets no devices, groups or engine requests, only the visibility variables for the
// selected GPUs by the node's own numbering: CUDA_VISIBLE_DEVICES (their UUIDs when every
// one is known, else their indices with CUDA_DEVICE_ORDER=PCI_BUS_ID, the order the
// indices count in), or ROCR_VISIBLE_DEVICES (their indices) with HIP_VISIBLE_DEVICES
// counting those from 0.
func (a GPUAccess) ForProcess() GPUAccess {
	a.Devices, a.GroupAdd, a.Requests, a.Env = nil, nil, nil, nil
	indices := make([]string, len(a.GPUs))
	uuids := make([]string, 0, len(a.GPUs))
	for i, g := range a.GPUs {
		indices[i] = strconv.Itoa(g.Index)
		if g.UUID != "" {
			uuids = append(uuids, g.UUID)
		}
	}
	switch a.Vendor {
	case gpu.VendorNVIDIA:
		if len(uuids) == len(a.GPUs) {
			a.Env = []manifest.EnvVar{{Name: "CUDA_VISIBLE_DEVICES", Value: strings.Join(uuids, ",")}}
		} else {
			a.Env = []manifest.EnvVar{{Name: "CUDA_DEVICE_ORDER", Value: "PCI_BUS_ID"}, {Name: "CUDA_VISIBLE_DEVICES", Value: strings.Join(indices, ",")}}
		}
	case gpu.VendorAMD:
		a.Env = []manifest.EnvVar{{Name: "HIP_VISIBLE_DEVICES", Value: containerIndices(len(a.GPUs))}, {Name: "ROCR_VISIBLE_DEVICES", Value: strings.Join(indices, ",")}}
	}
	return a
}

// processPaths is a benchmark's spec for the process runtime: it runs in its results folder
// unless it names a folder, and the launchers' paths under the container's output folder
// are that folder's on the node.
func processPaths(s Spec, resultsDir string) Spec {
	if s.Workdir == "" {
		s.Workdir = resultsDir
	}
	return relocate(s, OutputDir, resultsDir)
}

// relocate is s with the container path from named to (replacePath) in its folder, its
// command's words and its variables' values: where a process finds what a container would
// find at from.
func relocate(s Spec, from, to string) Spec {
	host := func(v string) string { return replacePath(v, from, to) }
	s.Workdir = host(s.Workdir)
	s.Command = slices.Clone(s.Command)
	for i, w := range s.Command {
		s.Command[i] = host(w)
	}
	s.Env = slices.Clone(s.Env)
	for i := range s.Env {
		s.Env[i].Value = host(s.Env[i].Value)
	}
	return s
}

// catalogProcessNotes says what of a MAD model's catalog recipe the process runtime does
// not apply (its Dockerfile's image, its docker options), and where it belongs instead; nil
// for a benchmark that is not a MAD model, or that has nothing of the kind.
func catalogProcessNotes(b manifest.Benchmark) []string {
	if b.Model == nil || b.Model.Catalog == "" {
		return nil
	}
	var out []string
	if b.Image != nil && b.Image.Builds() {
		out = append(out, fmt.Sprintf("its Dockerfile %s is not built: the process runs in the environment benchctl runs in, which should be that image (started by pyxis, enroot or Apptainer)", b.Image.Dockerfile))
	}
	if b.Container != nil {
		var opts []string
		c := *b.Container
		if c.IPC != "" && c.IPC != "host" {
			opts = append(opts, "--ipc "+c.IPC)
		}
		if c.ShmSize != 0 {
			opts = append(opts, "--shm-size")
		}
		if c.User != "" {
			opts = append(opts, "--user "+c.User)
		}
		for _, cp := range c.CapAdd {
			opts = append(opts, "--cap-add "+cp)
		}
		for _, d := range c.Devices {
			opts = append(opts, "--device "+d.Host)
		}
		for _, so := range c.SecurityOpt {
			opts = append(opts, "--security-opt "+so)
		}
		for _, g := range c.GroupAdd {
			opts = append(opts, "--group-add "+g)
		}
		if len(opts) > 0 {
			out = append(out, "its docker options ("+strings.Join(opts, " ")+") are not applied: a process has benchctl's own; give what it needs to the launcher that makes the environment")
		}
	}
	return out
}

// processWorkspace is a MAD model's spec for the process runtime, which mounts nothing:
// its workspace is where it is on the node (ws), not at /myworkspace, so the folder it runs
// in, its command and its variables name that folder instead (the workspace's links point
// into the checkout itself: workspace.Make); the workspace's and the checkout's mounts are
// dropped, and so are the catalog's docker options (catalogProcessNotes says which), but
// for the limits, which a process has too.
func processWorkspace(s Spec, ws string) Spec {
	s = relocate(s, manifest.ModelWorkspace, ws)
	var mounts []manifest.Mount
	for _, m := range s.Mounts {
		if t := path.Clean(m.Target); t != manifest.ModelWorkspace && t != workspace.CheckoutMount {
			mounts = append(mounts, m)
		}
	}
	s.Mounts = mounts
	s.Container = manifest.Container{Network: "host", IPC: "host", Ulimits: s.Container.Ulimits}
	return s
}

// replacePath replaces, in v, every occurrence of the path from that is a whole path or
// its prefix by to: one that starts v or follows a separator (a space, a quote, ':', '=',
// ',', ';'), and ends v or goes on with '/' or a separator. /myworkspace/x and
// --dir=/myworkspace, not /myworkspace2 or /data/myworkspace.
func replacePath(v, from, to string) string {
	const seps = " \t'\":=,;"
	var b strings.Builder
	last := 0
	for i := 0; i+len(from) <= len(v); {
		j := strings.Index(v[i:], from)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(from)
		if (start == 0 || strings.IndexByte(seps, v[start-1]) >= 0) && (end == len(v) || v[end] == '/' || strings.IndexByte(seps, v[end]) >= 0) {
			b.WriteString(v[last:start])
			b.WriteString(to)
			last = end
		}
		i = end
	}
	b.WriteString(v[last:])
	return b.String()
}

// withEnviron gives a process this benchctl's environment (as a container has its image's:
// PATH, the modules loaded, the site's variables), less benchctl's own variables (the job's
// secret among them) and, where benchctl gives GPUs, the node's GPU numbering, under what a
// container gets (passEnv, the manifest's env, secrets, the derived variables). A variable
// named like a credential is a secret: never printed.
func withEnviron(s Spec, environ []string) Spec {
	set := map[string]bool{}
	env := slices.Clone(s.Env)
	for _, e := range env {
		set[e.Name] = true
	}
	givesGPUs := s.GPU.Vendor == manifest.VendorAMD || s.GPU.Vendor == manifest.VendorNVIDIA
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || set[k] || strings.HasPrefix(k, "BENCHCTL_") || (givesGPUs && slices.Contains(hostNumbered, k)) {
			continue
		}
		env = append(env, manifest.EnvVar{Name: k, Value: v, Secret: manifest.CredentialLike(k)})
		set[k] = true
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	s.Env = env
	return s
}

// CommandLine renders a process's spec as a shell line that runs the same: its folder, the
// variables benchctl sets (secrets as ***) over the caller's environment, its argv. For
// --dry-run and messages; never executed.
func (s Spec) CommandLine() string {
	a := []string{"cd", shellQuote(s.Workdir), "&&", "env"}
	for _, e := range s.Env {
		v := e.Value
		if e.Secret || manifest.CredentialLike(e.Name) {
			v = manifest.Redacted
		}
		a = append(a, shellQuote(e.Name+"="+v))
	}
	for _, w := range s.Command {
		a = append(a, shellQuote(w))
	}
	return strings.Join(a, " ")
}
