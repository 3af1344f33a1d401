package doctor

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// recordCheck is doctor's "node record" line: the key facts of what this node is, and the
// whole record (in -o json).
func recordCheck(rec *jobdir.NodeRecord) Check {
	m := rec.Machine
	var facts []string
	add := func(format string, args ...any) { facts = append(facts, fmt.Sprintf(format, args...)) }
	if m.Kernel.Release != "" {
		add("kernel %s", m.Kernel.Release)
	}
	if m.OS.PrettyName != "" {
		add("%s", m.OS.PrettyName)
	}
	if m.CPU.Threads > 0 {
		add("%s (%s, %s, %s)", m.CPU.Model, count(m.CPU.Sockets, "socket"), count(m.CPU.Cores, "core"), count(m.CPU.Threads, "thread"))
	}
	if m.MemoryBytes > 0 {
		add("%d GiB memory", (m.MemoryBytes+1<<29)>>30)
	}
	if len(m.NUMA) > 0 {
		add("%s", count(len(m.NUMA), "NUMA node"))
	}
	for _, d := range m.Network {
		rate := ""
		if len(d.Ports) > 0 {
			rate = " " + d.Ports[0].Rate
		}
		add("%s %s fw %s%s", d.Name, d.Kind(), d.Firmware, rate)
	}
	if g := rec.GPU; len(g.Devices) > 0 {
		add("%s (%s), driver %s, runtime %s", count(len(g.Devices), "GPU"), g.Devices[0].Name, g.Driver, g.Runtime)
	}
	if rec.Engine.Version != "" {
		add("%s %s", cmp.Or(rec.Engine.Name, "engine"), rec.Engine.Version)
	}
	if m.Slurm != "" {
		add("%s", m.Slurm)
	}
	var un []string
	for k := range m.Unavailable {
		un = append(un, k)
	}
	for k := range rec.Unavailable {
		un = append(un, k)
	}
	if len(un) > 0 {
		slices.Sort(un)
		add("not readable: %s (see -o json)", strings.Join(un, ", "))
	}
	return Check{Name: "node record", OK: true, Detail: strings.Join(facts, "; "), Record: rec}
}

// agreedFields are the record's fields every node of a doctor run under srun must agree
// on: the GPU driver and runtime, each GPU's firmware, each RDMA device's firmware.
func agreedField(name string) bool {
	if name == "gpu.driver" || name == "gpu.runtime" {
		return true
	}
	if strings.HasPrefix(name, "gpu") && strings.Contains(name, ".firmware.") {
		return true
	}
	return strings.HasPrefix(name, "net.") && strings.HasSuffix(name, ".firmware")
}

// maxDoctorDiffs bounds the fields the agreement check names, and maxDoctorValues the
// values per field.
const (
	maxDoctorDiffs  = 10
	maxDoctorValues = 4
)

// writeDoctorRecord leaves this node's record in the doctor folder, atomically, before its
// marker: a node's marker means its record is there.
func writeDoctorRecord(dir string, rank int, rec *jobdir.NodeRecord) error {
	rec.Version = jobdir.NodeRecordVersion
	data, err := jsonIndent(rec)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(jobdir.DoctorRecord(dir, rank), data)
}

// agreementCheck is rank 0's comparison of every node's record: do they all have the same
// GPU driver and runtime, GPU firmware and RDMA firmware?
func agreementCheck(dir string, hosts []string) Check {
	const name = "same driver and firmware on every node"
	values := map[string]map[string][]int32{}
	var order []string
	var fr safefile.Reader
	var unreadable []string
	present := 0
	for r := range hosts {
		rec, err := jobdir.ReadNodeRecord(&fr, jobdir.DoctorRecord(dir, r))
		if err != nil {
			if len(unreadable) < maxDoctorValues {
				unreadable = append(unreadable, fmt.Sprintf("%s: %v", hosts[r], err))
			}
			continue
		}
		present++
		for _, f := range rec.Fields() {
			if !agreedField(f.Name) {
				continue
			}
			f.Name, f.Value = clip(f.Name), clip(f.Value) // a node wrote them: a line, not megabytes
			if values[f.Name] == nil {
				values[f.Name] = map[string][]int32{}
				order = append(order, f.Name)
			}
			values[f.Name][f.Value] = append(values[f.Name][f.Value], int32(r))
		}
	}
	var diffs []string
	for _, f := range order {
		n := 0
		for _, rs := range values[f] {
			n += len(rs)
		}
		vals := values[f]
		if n < present {
			vals[jobdir.Unreadable+" or absent"] = nil // counted below
		}
		if len(vals) < 2 {
			continue
		}
		if len(diffs) == maxDoctorDiffs {
			diffs = append(diffs, "…")
			break
		}
		var parts []string
		for v, rs := range vals {
			switch {
			case rs == nil:
				parts = append(parts, fmt.Sprintf("%d of %d nodes: %s", present-n, present, v))
			case len(rs) == 1:
				parts = append(parts, fmt.Sprintf("rank %d (%s): %s", rs[0], hosts[rs[0]], v))
			default:
				parts = append(parts, "ranks "+jobdir.RankRanges(rs, 4)+": "+v)
			}
		}
		slices.Sort(parts)
		if len(parts) > maxDoctorValues {
			parts = append(parts[:maxDoctorValues], fmt.Sprintf("%d more values", len(parts)-maxDoctorValues))
		}
		diffs = append(diffs, f+": "+strings.Join(parts, "; "))
	}
	switch {
	case len(unreadable) > 0:
		return Check{Name: name, Detail: "cannot compare: no record from " + strings.Join(unreadable, "; ") + " in " + dir,
			Fix: "run benchctl doctor on every node of the allocation under one srun, with the same --shared-dir"}
	case len(diffs) > 0:
		return Check{Name: name, Detail: strings.Join(diffs, " | "),
			Fix: "install the same GPU driver, ROCm/CUDA and firmware on every node, or leave the odd nodes out (sbatch --exclude)"}
	}
	if len(order) == 0 {
		return Check{Name: name, OK: true, Detail: fmt.Sprintf("nothing to compare: none of the %d nodes has a GPU driver, GPU firmware or RDMA device benchctl can read", present)}
	}
	return Check{Name: name, OK: true, Detail: fmt.Sprintf("all %d nodes agree on %d driver and firmware facts", present, len(order))}
}

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return append(data, '\n'), err
}

// count is "1 socket" or "2 sockets".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// maxDoctorText bounds a field name or value in the agreement check's line.
const maxDoctorText = 120

// clip is s cut to maxDoctorText bytes at a rune boundary, with "…" when cut.
func clip(s string) string {
	if len(s) <= maxDoctorText {
		return s
	}
	n := maxDoctorText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
