package host

import (
	"fmt"
	"slices"
	"strings"
)

// readCPU reads the model and the counts from /proc/cpuinfo ("model name", "physical id",
// "core id" of every "processor"); where cpuinfo does not say (Arm, some containers),
// the counts come from /sys/devices/system/cpu/cpu<n>/topology.
func readCPU(o Options) (CPU, error) {
	s, err := o.readSmall(maxCPUInfo, "proc", "cpuinfo")
	if err != nil {
		return CPU{}, err
	}
	var c CPU
	sockets := map[string]bool{}
	cores := map[string]bool{}
	var phys string
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			c.Threads++
			phys = ""
		case "model name", "Model", "cpu model", "Hardware":
			if c.Model == "" {
				c.Model = cut(v)
			}
		case "physical id":
			phys = v
			sockets[v] = true
		case "core id":
			cores[phys+"/"+v] = true
		}
	}
	c.Sockets, c.Cores = len(sockets), len(cores)
	if c.Threads == 0 || c.Sockets == 0 || c.Cores == 0 {
		if t, ok := sysfsTopology(o); ok {
			c.Threads, c.Sockets, c.Cores = t.Threads, t.Sockets, t.Cores
		}
	}
	if c.Model == "" || c.Threads == 0 {
		return c, fmt.Errorf("%s names no model or no processor", o.path("proc", "cpuinfo"))
	}
	return c, nil
}

// sysfsTopology counts CPUs, packages and cores from /sys/devices/system/cpu.
func sysfsTopology(o Options) (CPU, bool) {
	names, err := o.list("sys", "devices", "system", "cpu")
	if err != nil {
		return CPU{}, false
	}
	var c CPU
	sockets, cores := map[string]bool{}, map[string]bool{}
	for _, n := range names {
		if numericSuffix(n, "cpu") < 0 {
			continue
		}
		pkg, err1 := o.value("sys", "devices", "system", "cpu", n, "topology", "physical_package_id")
		core, err2 := o.value("sys", "devices", "system", "cpu", n, "topology", "core_id")
		if err1 != nil || err2 != nil {
			continue
		}
		c.Threads++
		sockets[pkg], cores[pkg+"/"+core] = true, true
	}
	c.Sockets, c.Cores = len(sockets), len(cores)
	return c, c.Threads > 0
}

// readNUMA reads /sys/devices/system/node/node<n>/{cpulist,meminfo}, in node order. A
// machine without the folder (a kernel without NUMA support) has its numa field
// unavailable, saying so.
func readNUMA(o Options) ([]NUMANode, error) {
	names, err := o.list("sys", "devices", "system", "node")
	if err != nil {
		return []NUMANode{}, err
	}
	out := []NUMANode{}
	for _, n := range names {
		id := numericSuffix(n, "node")
		if id < 0 {
			continue
		}
		node := NUMANode{ID: id}
		if node.CPUs, err = o.value("sys", "devices", "system", "node", n, "cpulist"); err != nil {
			return out, err
		}
		mi, err := o.readSmall(maxFile, "sys", "devices", "system", "node", n, "meminfo")
		if err != nil {
			return out, err
		}
		var ok bool
		if node.MemoryBytes, ok = meminfoTotal(mi, "MemTotal:"); !ok {
			return out, fmt.Errorf("%s has no MemTotal line in kB", o.path("sys", "devices", "system", "node", n, "meminfo"))
		}
		out = append(out, node)
	}
	slices.SortFunc(out, func(a, b NUMANode) int { return a.ID - b.ID })
	if len(out) == 0 {
		return out, fmt.Errorf("%s lists no node<n>", o.path("sys", "devices", "system", "node"))
	}
	return out, nil
}
