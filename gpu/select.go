package gpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SelectError is a GPU request this node cannot satisfy: invalid input (exit 4).
type SelectError struct{ Msg string }

func (e *SelectError) Error() string      { return e.Msg }
func (e *SelectError) InvalidInput() bool { return true }

func selectErrorf(format string, args ...any) error {
	return &SelectError{Msg: fmt.Sprintf(format, args...)}
}

// Select returns the GPUs a job may use on this node, in the order the job sees them:
//
//  1. Slurm's allocation, SLURM_STEP_GPUS else SLURM_JOB_GPUS: GPU indices and ranges
//     ("0-3,6"), matched against GPU.Index;
//  2. else the vendor's visibility variables, indices (GPU.Index) or UUIDs (a unique
//     "GPU-" prefix is enough, as CUDA allows): CUDA_VISIBLE_DEVICES for NVIDIA;
//     ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES on top of it, for AMD (HIP indices
//     count the GPUs ROCr left visible, as HIP does);
//  3. else every GPU of the inventory;
//
// then the first count of them (0 = all). Empty variables count as unset. Unknown indices,
// repeated GPUs and more GPUs than available are a *SelectError naming the numbers; unlike
// CUDA, a bad entry never silently shortens the list.
//
// Slurm's indices are its gres.conf order, which is this inventory's order when Slurm
// autodetects GPUs (AutoDetect=nvml/rsmi) and benchctl runs outside the step's device
// cgroup. Inside a step with ConstrainDevices=yes NVML lists only the allocated GPUs,
// renumbered from 0, so there SLURM_*_GPUS may name indices the inventory does not have,
// which is reported as an error rather than guessed around. CUDA_VISIBLE_DEVICES indices
// are taken as NVML indices, which CUDA's default order matches on nodes of one GPU model.
func Select(inv Inventory, count int, env map[string]string) ([]GPU, error) {
	if count < 0 {
		return nil, selectErrorf("GPU count %d is negative (0 means all)", count)
	}
	avail, from, err := allocated(inv, env)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		count = len(avail)
	}
	if count > len(avail) {
		return nil, selectErrorf("%s requested but only %d available %s", plural(count, "GPU"), len(avail), from)
	}
	out := make([]GPU, count) // a copy: callers may change it without touching the inventory
	for i, g := range avail[:count] {
		g.Devices = slices.Clone(g.Devices)
		out[i] = g
	}
	return out, nil
}

// allocated applies the allocation variables and says where the list came from.
func allocated(inv Inventory, env map[string]string) ([]GPU, string, error) {
	has := nodeHas(inv)
	for _, k := range []string{"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"} {
		if v := strings.TrimSpace(env[k]); v != "" {
			list, err := resolve(k, v, inv.GPUs, false, false)
			return list, "(" + k + "=" + v + "; " + has + ")", err
		}
	}
	var keys []string
	switch inv.Vendor {
	case VendorNVIDIA:
		keys = []string{"CUDA_VISIBLE_DEVICES"}
	case VendorAMD:
		keys = []string{"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}
	}
	list := inv.GPUs
	var used []string
	for i, k := range keys {
		v := strings.TrimSpace(env[k])
		if v == "" {
			continue
		}
		var err error
		if list, err = resolve(k, v, list, i > 0, true); err != nil {
			return nil, "", err
		}
		used = append(used, k+"="+v)
	}
	if list == nil {
		list = []GPU{}
	}
	if len(used) > 0 {
		return list, "(" + strings.Join(used, ", ") + "; " + has + ")", nil
	}
	return list, "(" + has + ")", nil
}

func nodeHas(inv Inventory) string {
	switch len(inv.GPUs) {
	case 0:
		return "this node has no GPUs"
	case 1:
		return "this node has 1 " + vendorTitle(inv.Vendor) + " GPU"
	}
	return fmt.Sprintf("this node has %d %s GPUs", len(inv.GPUs), vendorTitle(inv.Vendor))
}

// resolve reads one comma list against base. Indices match GPU.Index, or the position in
// base when byPosition (HIP over ROCr). Ranges are Slurm's; UUIDs only in visibility lists.
func resolve(key, value string, base []GPU, byPosition, uuids bool) ([]GPU, error) {
	var out []GPU
	seen := map[string]bool{}
	add := func(g GPU, entry string) error {
		id := g.UUID + "#" + strconv.Itoa(g.Index)
		if seen[id] {
			return selectErrorf("%s=%q names GPU %d twice (%q)", key, value, g.Index, entry)
		}
		seen[id] = true
		out = append(out, g)
		return nil
	}
	for _, entry := range strings.Split(value, ",") {
		entry = strings.TrimSpace(entry)
		if uuids && !isIndexOrRange(entry) {
			g, err := byUUID(key, value, entry, base)
			if err != nil {
				return nil, err
			}
			if err := add(g, entry); err != nil {
				return nil, err
			}
			continue
		}
		lo, hi, err := indexRange(entry)
		if err != nil || (uuids && lo != hi) {
			want := "a GPU index or range"
			if uuids {
				want = "a GPU index or UUID"
			}
			return nil, selectErrorf("%s=%q: %q is not %s", key, value, entry, want)
		}
		for i := lo; i <= hi; i++ {
			g, ok := byIndex(base, i, byPosition)
			if !ok {
				return nil, selectErrorf("%s=%q: GPU %d is not there (%s)", key, value, i, describe(base, byPosition))
			}
			if err := add(g, entry); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func isIndexOrRange(s string) bool {
	_, _, err := indexRange(s)
	return err == nil
}

// indexRange reads "3" or "0-3".
func indexRange(s string) (int, int, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err := strconv.Atoi(a)
	if err != nil || lo < 0 {
		return 0, 0, fmt.Errorf("not an index")
	}
	hi := lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil || hi < lo {
			return 0, 0, fmt.Errorf("not a range")
		}
	}
	return lo, hi, nil
}

func byIndex(base []GPU, i int, byPosition bool) (GPU, bool) {
	if byPosition {
		if i < len(base) {
			return base[i], true
		}
		return GPU{}, false
	}
	for _, g := range base {
		if g.Index == i {
			return g, true
		}
	}
	return GPU{}, false
}

// byUUID matches a UUID exactly (any case) or, for "GPU-..." entries, by unique prefix.
func byUUID(key, value, entry string, base []GPU) (GPU, error) {
	if strings.HasPrefix(entry, "MIG-") {
		return GPU{}, selectErrorf("%s=%q: %q is a MIG instance; benchctl selects whole GPUs", key, value, entry)
	}
	var hits []GPU
	for _, g := range base {
		switch {
		case g.UUID == "":
		case strings.EqualFold(g.UUID, entry):
			return g, nil
		case len(entry) > len("GPU-") && strings.HasPrefix(strings.ToLower(g.UUID), strings.ToLower(entry)):
			hits = append(hits, g)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return GPU{}, selectErrorf("%s=%q: no GPU has UUID %q", key, value, entry)
	}
	return GPU{}, selectErrorf("%s=%q: %q is the start of %d GPUs' UUIDs", key, value, entry, len(hits))
}

// describe says which indices exist, for messages: "GPUs 0-7", "GPUs 0,2,5", "no GPUs".
func describe(base []GPU, byPosition bool) string {
	if len(base) == 0 {
		return "no GPUs"
	}
	idx := make([]int, len(base))
	contiguous := true
	for i, g := range base {
		idx[i] = i
		if !byPosition {
			idx[i] = g.Index
		}
		if i > 0 && idx[i] != idx[i-1]+1 {
			contiguous = false
		}
	}
	if contiguous && len(idx) > 1 {
		return fmt.Sprintf("GPUs %d-%d", idx[0], idx[len(idx)-1])
	}
	s := make([]string, len(idx))
	for i, v := range idx {
		s[i] = strconv.Itoa(v)
	}
	if len(s) == 1 {
		return "GPU " + s[0]
	}
	return "GPUs " + strings.Join(s, ",")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
