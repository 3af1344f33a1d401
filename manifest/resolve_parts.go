package manifest

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/distribution/reference"

	"github.com/benchctl/benchctl/manifest/document"
	"github.com/benchctl/benchctl/manifest/figures"
	"github.com/benchctl/benchctl/manifest/kubernetes"
)

var (
	slurmTimeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|(?i:unlimited|infinite))$`)
	})
	slurmNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.,:+-]+$`) })
	capabilities = "AUDIT_CONTROL AUDIT_READ AUDIT_WRITE BLOCK_SUSPEND BPF CHECKPOINT_RESTORE CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID IPC_LOCK IPC_OWNER KILL LEASE LINUX_IMMUTABLE MAC_ADMIN MAC_OVERRIDE MKNOD NET_ADMIN NET_BIND_SERVICE NET_BROADCAST NET_RAW PERFMON SETFCAP SETGID SETPCAP SETUID SYS_ADMIN SYS_BOOT SYS_CHROOT SYS_MODULE SYS_NICE SYS_PACCT SYS_PTRACE SYS_RAWIO SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG SYSLOG WAKE_ALARM ALL"
	ulimitNames  = "core cpu data fsize locks memlock msgqueue nice nofile nproc rss rtprio rttime sigpending stack"
)

// checkReference validates an image reference; a tag may not carry a digest.
func checkReference(s string, allowDigest bool) error {
	ref, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		if errors.Is(err, reference.ErrNameContainsUppercase) {
			return errors.New("repository names must be lower-case")
		}
		return err
	}
	if _, ok := ref.(reference.Digested); ok && !allowDigest {
		return errors.New("a tag cannot contain a digest")
	}
	return nil
}

func (r *resolver) mounts(in []MountSpec) []Mount {
	var out []Mount
	from := map[string]int{} // target -> index in in
	kept := map[string]int{} // target -> index in out
	for i, ms := range in {
		fp := document.Index("mounts", i)
		if ms.Source == "" {
			continue // already reported by the decoder
		}
		src, ok := r.value(fp, ms.Source)
		if !ok {
			continue
		}
		if src == "" {
			r.p.Add(fp, "source %s expands to an empty path: set the variable, or give it a default (${VAR:-/path})", document.Quote(ms.Source))
			continue
		}
		tgt, ok := r.value(fp, ms.Target)
		if !ok {
			continue
		}
		if tgt == "" {
			r.p.Add(fp, "target %s expands to an empty path: give an absolute container path (e.g. /data)", document.Quote(ms.Target))
			continue
		}
		if !path.IsAbs(tgt) {
			r.p.Add(fp, "container target %s must be an absolute path (e.g. /data)", document.Quote(tgt))
			continue
		}
		tgt = path.Clean(tgt)
		if tgt == "/" {
			r.p.Add(fp, "cannot mount over the container's root /")
			continue
		}
		if tgt == ReservedMountRoot || strings.HasPrefix(tgt, ReservedMountRoot+"/") {
			r.p.Add(fp, "target %s is inside %s, which benchctl uses for its own folders", tgt, ReservedMountRoot)
			continue
		}
		m := Mount{Source: r.abs(src), Target: tgt, ReadOnly: ms.ReadOnly}
		if j, dup := from[tgt]; dup {
			prev := out[kept[tgt]]
			if prev.Source == m.Source && prev.ReadOnly == m.ReadOnly {
				continue // the same mount twice: merged
			}
			if prev.Source != m.Source {
				r.p.Add(fp, "target %s is already mounted from %s (mounts[%d], line %d); this one mounts %s: one target needs one source", tgt, prev.Source, j, in[j].Line, m.Source)
			} else {
				r.p.Add(fp, "target %s is mounted twice from %s, once read-only and once read-write (mounts[%d], line %d): pick one", tgt, m.Source, j, in[j].Line)
			}
			continue
		}
		from[tgt], kept[tgt] = i, len(out)
		if r.sourceMissing(m.Source) {
			r.warn(fp, "source %s does not exist on this machine (it must exist on every node that runs the benchmark)", m.Source)
		}
		out = append(out, m)
	}
	return out
}

// sourceMissing reports whether a mount source does not exist here (looked up once a path).
func (r *resolver) sourceMissing(p string) bool {
	if r.missing == nil {
		r.missing = map[string]bool{}
	}
	miss, ok := r.missing[p]
	if !ok {
		_, err := os.Stat(p)
		miss = err != nil
		r.missing[p] = miss
	}
	return miss
}

func (r *resolver) container(s ContainerSpec) Container {
	c := Container{Network: "host", IPC: "host", ShmSize: s.ShmSize.Bytes}
	switch s.Network {
	case "":
	case "host", "none", "bridge":
		c.Network = s.Network
	default:
		r.p.Add("container.network", "%s is not supported (allowed: host, none, bridge; multi-node benchmarks need host)", document.Quote(s.Network))
	}
	switch s.IPC {
	case "":
	case "host", "private", "shareable", "none":
		c.IPC = s.IPC
	default:
		r.p.Add("container.ipc", "%s is not supported (allowed: host, private, shareable, none)", document.Quote(s.IPC))
	}
	if s.User != "" && !userRE().MatchString(s.User) {
		r.p.Add("container.user", "%s is not a user (NAME, UID, NAME:GROUP or UID:GID)", document.Quote(s.User))
	}
	c.User = s.User
	caps := map[string]bool{}
	for _, k := range strings.Fields(capabilities) {
		caps[k] = true
	}
	for i, cp := range s.CapAdd {
		name := strings.TrimPrefix(strings.ToUpper(cp), "CAP_")
		if !caps[name] {
			r.p.Add(document.Index("container.capAdd", i), "%s is not a Linux capability (e.g. SYS_PTRACE, IPC_LOCK, SYS_ADMIN)", document.Quote(cp))
			continue
		}
		c.CapAdd = append(c.CapAdd, name)
	}
	for i, dv := range s.Devices {
		fp := document.Index("container.devices", i)
		parts := strings.Split(dv, ":")
		d := Device{Host: path.Clean(parts[0]), Permissions: "rwm"}
		d.Container = d.Host
		if len(parts) > 3 || !strings.HasPrefix(parts[0], "/") || !strings.HasPrefix(d.Host, "/dev/") {
			r.p.Add(fp, "%s is not a device (HOST[:CONTAINER[:PERMISSIONS]], HOST under /dev, e.g. /dev/infiniband/uverbs0)", document.Quote(dv))
			continue
		}
		if len(parts) >= 2 {
			if !path.IsAbs(parts[1]) {
				r.p.Add(fp, "container path %s must be absolute", document.Quote(parts[1]))
				continue
			}
			d.Container = path.Clean(parts[1])
		}
		if len(parts) == 3 {
			if parts[2] == "" || strings.Trim(parts[2], "rwm") != "" {
				r.p.Add(fp, "permissions %s must be made of r, w and m", document.Quote(parts[2]))
				continue
			}
			d.Permissions = parts[2]
		}
		c.Devices = append(c.Devices, d)
	}
	known := map[string]bool{}
	for _, k := range strings.Fields(ulimitNames) {
		known[k] = true
	}
	for _, k := range sortedKeys(s.Ulimits) {
		if !known[k] {
			r.p.Add("container.ulimits."+k, "is not a ulimit (allowed: %s)", strings.ReplaceAll(ulimitNames, " ", ", "))
			continue
		}
		u := s.Ulimits[k]
		c.Ulimits = append(c.Ulimits, Limit{Name: k, Soft: u.Soft, Hard: u.Hard})
	}
	return c
}

// ValidBenchmarkName: letters, digits, '.', '_', '-', starting with a letter or digit; at
// most 100 (it names folders and containers).
func ValidBenchmarkName(s string) bool { return len(s) <= 100 && benchNameRE().MatchString(s) }

// CleanResultsPath cleans a benchmark's results file name; ok is false unless it stays
// inside $BENCHCTL_OUTPUT_DIR.
func CleanResultsPath(s string) (clean string, ok bool) {
	clean = path.Clean(s)
	if path.IsAbs(s) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return "", false
	}
	return clean, true
}

// ValidTag: a non-empty tag without blanks or commas.
func ValidTag(t string) bool { return t != "" && !strings.ContainsAny(t, ", \t\n") }

func (r *resolver) benchmarks(in []BenchmarkSpec) []Benchmark {
	var out []Benchmark
	seen := map[string]int{}
	for i, s := range in {
		if i%document.CheckEvery == 0 && r.ctx.Err() != nil {
			return out
		}
		fp := document.Index("benchmarks", i)
		b := Benchmark{Name: s.Name, Workdir: s.Workdir, Results: s.Results, Tags: s.Tags, Timeout: Duration(DefaultTimeout)}
		switch {
		case s.Name == "":
			r.p.Add(fp+".name", "is required")
		case !ValidBenchmarkName(s.Name):
			r.p.Add(fp+".name", "%s is not a valid benchmark name (letters, digits, '.', '_', '-'; at most 100)", document.Quote(s.Name))
		default:
			if j, dup := seen[s.Name]; dup {
				r.p.Add(fp+".name", "%s is already the name of benchmarks[%d] (names must be unique)", document.Quote(s.Name), j)
			}
			seen[s.Name] = i
		}
		if r.p.Has(fp + ".command") {
			// already reported (e.g. a shell string instead of a list)
		} else if len(s.Command) == 0 {
			if _, written := r.p.Written(fp + ".command"); !written || s.Command == nil {
				r.p.Add(fp+".command", "is required: the program and its arguments as a list, e.g. [\"python3\", \"train.py\", \"--epochs\", \"1\"]")
			} else {
				r.p.Add(fp+".command", "is empty: give the program and its arguments as a list")
			}
		} else if s.Command[0] == "" {
			r.p.Add(document.Index(fp+".command", 0), "the program name is empty")
		}
		b.Command = s.Command
		if s.Workdir != "" && !path.IsAbs(s.Workdir) {
			r.p.Add(fp+".workdir", "%s must be an absolute path in the container", document.Quote(s.Workdir))
		}
		if s.Timeout.Set {
			b.Timeout = Duration(s.Timeout.D)
		}
		if s.Results != "" {
			if clean, ok := CleanResultsPath(s.Results); !ok {
				r.p.Add(fp+".results", "%s must be a file name relative to $BENCHCTL_OUTPUT_DIR (e.g. perf.csv)", document.Quote(s.Results))
			} else {
				b.Results = clean
			}
		}
		for j, t := range s.Tags {
			if !ValidTag(t) {
				r.p.Add(document.Index(fp+".tags", j), "%s is not a tag (no spaces or commas)", document.Quote(t))
			}
		}
		b.Env = r.env(fp+".env", s.Env)
		if s.Image != nil {
			img := r.image(fp+".image", s.Image, false)
			b.Image = &img
		}
		b.NoLogScan = s.LogScan != nil && !*s.LogScan
		switch s.OnFailure {
		case "", OnFailureAbort, OnFailureContinue:
			b.OnFailure = s.OnFailure
		default:
			r.p.Add(fp+".onFailure", "%s is not a failure policy: use \"abort\" (stop every node's container; the default with more than one node) or \"continue\" (the other nodes go on)", document.Quote(s.OnFailure))
		}
		if msg := LauncherProblem(s.Launcher); msg != "" {
			r.p.Add(fp+".launcher", "%s", msg)
		} else {
			b.Launcher, _ = CanonicalLauncher(s.Launcher)
		}
		b.RanksPerNode = r.ranksPerNode(fp+".ranksPerNode", s.RanksPerNode)
		if len(s.Figures) > figures.MaxFigures {
			r.p.Add(fp+".figures", "%d figures, more than %d: each reads the output once; read several metrics with one parser", len(s.Figures), figures.MaxFigures)
		}
		if len(s.Figures) > 0 {
			if s.Results != "" {
				r.p.Add(fp+".results", "the figures are written to %s: drop results (or drop figures and have the program write the CSV)", figures.ResultsFile)
			}
			b.Results = figures.ResultsFile
		}
		for j, fs := range s.Figures {
			f := figures.Spec(fs)
			for _, p := range f.Check() {
				r.p.Add(document.Index(fp+".figures", j)+"."+p.Field, "%s", p.Msg)
			}
			b.Figures = append(b.Figures, f)
		}
		if s.Success != nil {
			b.Success = &figures.Success{Require: s.Success.Require, Forbid: s.Success.Forbid}
			for _, p := range b.Success.Check() {
				r.p.Add(fp+".success."+p.Field, "%s", p.Msg)
			}
		}
		out = append(out, b)
	}
	return out
}

func (r *resolver) models(s *ModelsSpec) *Models {
	m := &Models{Tags: s.Tags, Names: s.Names, GuestOS: s.GuestOS}
	switch v := strings.ToLower(s.GPUVendor); v {
	case "":
	case VendorAMD, VendorNVIDIA:
		m.GPUVendor = v
	default:
		r.p.Add("models.gpuVendor", "%s is not a vendor a Dockerfile's CONTEXT line names (allowed: amd, nvidia)", document.Quote(s.GPUVendor))
	}
	if s.Catalog == "" {
		r.p.Add("models.catalog", "is required: the path of a MAD-style models.json")
	} else if v, ok := r.value("models.catalog", s.Catalog); ok {
		m.Catalog = r.abs(v)
		if st, err := os.Stat(m.Catalog); err != nil {
			r.p.Add("models.catalog", "%s does not exist (paths are relative to the manifest's folder %s)", m.Catalog, r.dir)
		} else if st.IsDir() {
			m.Catalog = filepath.Join(m.Catalog, "models.json")
			if _, err := os.Stat(m.Catalog); err != nil {
				r.p.Add("models.catalog", "%s is a directory without a models.json", filepath.Dir(m.Catalog))
			}
		}
	}
	if len(s.Tags) == 0 && len(s.Names) == 0 {
		r.p.Add("models", "select models with tags (or [all]) or names")
	}
	for i, t := range s.Tags {
		if strings.TrimSpace(t) == "" {
			r.p.Add(document.Index("models.tags", i), "is empty")
		}
	}
	return m
}

func (r *resolver) logScan(s LogScanSpec) LogScan {
	l := LogScan{Disabled: s.Enabled != nil && !*s.Enabled}
	check := func(field string, list []string) []string {
		for i, p := range list {
			if strings.TrimSpace(p) == "" || strings.ContainsAny(p, "\n\r") {
				r.p.Add(document.Index("logScan."+field, i), "%s is not a pattern: give the text a log line contains (one line, not blank)", document.Quote(p))
			}
		}
		return list
	}
	if s.Errors != nil {
		l.Errors = check("errors", s.Errors)
		if len(s.Errors) == 0 {
			r.p.Add("logScan.errors", "is empty: to turn the scan off, write logScan: {enabled: false}")
		}
	}
	if s.Benign != nil {
		l.Benign = check("benign", s.Benign)
	}
	return l
}

func (r *resolver) job(s JobSpec) Job {
	var j Job
	if s.Heartbeat.Set {
		if d := s.Heartbeat.D; d < MinHeartbeat || d > MaxHeartbeat {
			r.p.Add("job.heartbeat", "%s is out of range: give %s to %s (a node silent for three periods is lost)", document.Quote(d.String()), MinHeartbeat, MaxHeartbeat)
		} else {
			j.Heartbeat = Duration(d)
		}
	}
	return j
}

// kubernetes is the block with its values expanded (${VAR}, never a secret), checked.
func (r *resolver) kubernetes(b kubernetes.Block) kubernetes.Block {
	for _, f := range []struct {
		name string
		v    *string
	}{{"namespace", &b.Namespace}, {"serviceAccount", &b.ServiceAccount}, {"priorityClass", &b.PriorityClass}, {"cpu", &b.CPU},
		{"memory", &b.Memory}, {"gpuResource", &b.GPUResource}, {"resultsClaim", &b.ResultsClaim}, {"resultsHostPath", &b.ResultsHostPath},
		{"network", &b.Network}, {"benchctlImage", &b.BenchctlImage}, {"pendingTimeout", &b.PendingTimeout}} {
		if v, ok := r.value("kubernetes."+f.name, *f.v); ok {
			*f.v = v
		} else {
			return b
		}
	}
	for _, p := range b.Check() {
		r.p.Add("kubernetes."+p.Field, "%s", p.Msg)
	}
	return b
}

func (r *resolver) slurm(s SlurmSpec) Slurm {
	out := Slurm(s)
	if _, set := r.p.Written("slurm.nodes"); set && s.Nodes < 1 {
		r.p.Add("slurm.nodes", "must be at least 1, got %d", s.Nodes)
	}
	if out.Nodes == 0 {
		out.Nodes = 1
	}
	for _, f := range []struct{ name, v string }{{"partition", s.Partition}, {"account", s.Account}, {"qos", s.QOS}} {
		if f.v != "" && !slurmNameRE().MatchString(f.v) {
			r.p.Add("slurm."+f.name, "%s is not a Slurm %s name (letters, digits and . _ , : + -)", document.Quote(f.v), f.name)
		}
	}
	if s.Time != "" && !slurmTimeRE().MatchString(s.Time) {
		r.p.Add("slurm.time", "%s is not a Slurm time limit (MM, HH:MM:SS, D-HH, D-HH:MM:SS or UNLIMITED)", document.Quote(s.Time))
	}
	if s.GPUsPerNode != nil && *s.GPUsPerNode < 0 {
		r.p.Add("slurm.gpusPerNode", "must be 0 or more, got %d", *s.GPUsPerNode)
	}
	for i, a := range s.SbatchArgs {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "\n\r\x00") {
			r.p.Add(document.Index("slurm.sbatchArgs", i), "%s is not an sbatch option (one option per item, starting with -, e.g. \"--constraint=mi300x\")", document.Quote(a))
		}
	}
	return out
}

// ranksPerNode checks a ranksPerNode (0: not given).
func (r *resolver) ranksPerNode(fp string, n int) int {
	if _, written := r.p.Written(fp); written && (n < 1 || n > MaxRanksPerNode) {
		r.p.Add(fp, "%d ranks per node: give 1 to %d (or leave it out: the node's GPUs)", n, MaxRanksPerNode)
		return 0
	}
	return n
}

// mpi checks benchmark i's MPI settings: ranksPerNode only with an MPI launcher, whose
// ranks reach each other directly: on the nodes' own network.
func (r *resolver) mpi(m *Manifest, b *Benchmark, i int) {
	fp := document.Index("benchmarks", i)
	if !MPILauncher(b.Launcher) {
		if _, own := r.p.Written(fp + ".ranksPerNode"); own && b.RanksPerNode > 0 {
			r.p.Add(fp+".ranksPerNode", "is for the MPI launchers (launcher: mpirun or mpiexec); %s's ranks per node are its GPUs", document.Quote(launcherName(b.Launcher)))
		}
		return
	}
	c := m.Container
	if b.Container != nil {
		c = *b.Container
	}
	if !m.Process() && c.Network != "" && c.Network != "host" {
		r.p.Add("container.network", "%s: benchmark %s's launcher %s needs the nodes' network (host): its ranks and daemons reach each other directly",
			c.Network, b.Name, b.Launcher)
	}
}

func launcherName(l string) string {
	if l == "" {
		return LauncherTorchrun
	}
	return l
}
