package kubernetes

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchctl/benchctl/manifest/document"
)

// Problem is a field of the block that is wrong (its path below kubernetes, and why).
type Problem struct {
	Field string
	Msg   string
}

// DefaultPendingTimeout is how long a pod may stay Pending when the block says nothing.
const DefaultPendingTimeout = 10 * time.Minute

var (
	labelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	subdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	nameRE      = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	quantityRE  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)
	imageRE     = regexp.MustCompile(`^[a-z0-9][^\s]*$`)
)

func quote(s string) string { return document.Clip(document.Quote(s)) }

// Label reports whether s is a DNS label as Kubernetes names namespaces and the objects
// whose names become host names: lower-case letters, digits and '-', at most 63.
func Label(s string) bool { return len(s) <= 63 && labelRE.MatchString(s) }

// subdomain reports whether s is a DNS subdomain as Kubernetes names objects.
func subdomain(s string) bool { return len(s) <= 253 && subdomainRE.MatchString(s) }

// QualifiedName reports whether s is a label key or an extended resource name: an optional
// prefix (a DNS subdomain) and '/', then a name of at most 63 characters.
func QualifiedName(s string, needPrefix bool) bool {
	prefix, name, ok := strings.Cut(s, "/")
	if !ok {
		prefix, name = "", s
	}
	if ok && !subdomain(prefix) || needPrefix && (!ok || !strings.Contains(prefix, ".")) {
		return false
	}
	return len(name) <= 63 && nameRE.MatchString(name)
}

// Check says what is wrong with the block: names Kubernetes would refuse, quantities it
// cannot read, settings that contradict each other.
func (b *Block) Check() []Problem {
	var out []Problem
	add := func(f, format string, a ...any) { out = append(out, Problem{f, fmt.Sprintf(format, a...)}) }
	if b.Namespace != "" && !Label(b.Namespace) {
		add("namespace", "%s is not a namespace name (lower-case letters, digits and '-', at most 63)", quote(b.Namespace))
	}
	for _, f := range []struct{ field, v string }{{"serviceAccount", b.ServiceAccount}, {"priorityClass", b.PriorityClass}, {"resultsClaim", b.ResultsClaim}} {
		if f.v != "" && !subdomain(f.v) {
			add(f.field, "%s is not a Kubernetes object name (lower-case letters, digits, '-' and '.', at most 253)", quote(f.v))
		}
	}
	keys := make([]string, 0, len(b.NodeSelector))
	for k := range b.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !QualifiedName(k, false) {
			add("nodeSelector", "%s is not a label key (an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' and '.')", quote(k))
		}
		if v := b.NodeSelector[k]; v != "" && (len(v) > 63 || !nameRE.MatchString(v)) {
			add("nodeSelector."+k, "%s is not a label value (at most 63 letters, digits, '-', '_' and '.')", quote(v))
		}
	}
	for i, t := range b.Tolerations {
		fp := fmt.Sprintf("tolerations[%d]", i)
		switch t.Operator {
		case "", "Equal":
			if t.Key == "" {
				add(fp+".key", "is required with operator Equal (operator Exists with no key tolerates every taint)")
			}
		case "Exists":
			if t.Value != "" {
				add(fp+".value", "must be empty with operator Exists")
			}
		default:
			add(fp+".operator", "%s is not a toleration operator (Equal or Exists)", quote(t.Operator))
		}
		if t.Key != "" && !QualifiedName(t.Key, false) {
			add(fp+".key", "%s is not a taint key", quote(t.Key))
		}
		if !slices.Contains([]string{"", "NoSchedule", "PreferNoSchedule", "NoExecute"}, t.Effect) {
			add(fp+".effect", "%s is not a taint effect (NoSchedule, PreferNoSchedule or NoExecute)", quote(t.Effect))
		}
	}
	for _, f := range []struct{ field, v string }{{"cpu", b.CPU}, {"memory", b.Memory}} {
		if f.v != "" && (!quantityRE.MatchString(f.v) || strings.Trim(f.v, "0.mkMGTPEi") == "") {
			add(f.field, "%s is not a Kubernetes quantity above zero (e.g. \"16\", \"500m\", \"64Gi\")", quote(f.v))
		}
	}
	if b.GPUResource != "" && !QualifiedName(b.GPUResource, true) {
		add("gpuResource", "%s is not an extended resource name (a domain, '/', a name: nvidia.com/gpu, amd.com/gpu)", quote(b.GPUResource))
	}
	if b.ResultsClaim != "" && b.ResultsHostPath != "" {
		add("resultsHostPath", "give resultsClaim or resultsHostPath, not both")
	}
	if p := b.ResultsHostPath; p != "" && (!path.IsAbs(p) || path.Clean(p) != p || p == "/") {
		add("resultsHostPath", "%s must be an absolute, clean folder other than /", quote(p))
	}
	if b.Network != "" && b.Network != "host" && b.Network != "pod" {
		add("network", "%s is not a network (host or pod)", quote(b.Network))
	}
	if b.BenchctlImage != "" && (len(b.BenchctlImage) > 512 || !imageRE.MatchString(b.BenchctlImage)) {
		add("benchctlImage", "%s is not an image reference", quote(b.BenchctlImage))
	}
	if b.PendingTimeout != "" {
		if d, err := time.ParseDuration(b.PendingTimeout); err != nil || d <= 0 || d > 7*24*time.Hour {
			add("pendingTimeout", "%s is not a duration from 1s to 168h (e.g. \"10m\")", quote(b.PendingTimeout))
		}
	}
	return out
}

// Pending is the block's pending timeout (DefaultPendingTimeout when not given).
func (b *Block) Pending() time.Duration {
	if d, err := time.ParseDuration(b.PendingTimeout); err == nil && d > 0 {
		return d
	}
	return DefaultPendingTimeout
}

// GPUResourceOf is the resource a node's GPUs are offered as: the block's, else the
// vendor's device plugin's ("" for a vendor without one).
func (b *Block) GPUResourceOf(vendor string) string {
	if b != nil && b.GPUResource != "" {
		return b.GPUResource
	}
	switch vendor {
	case "nvidia":
		return "nvidia.com/gpu"
	case "amd":
		return "amd.com/gpu"
	}
	return ""
}
