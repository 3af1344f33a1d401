package runner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"

	"github.com/benchctl/benchctl/manifest"
)

// gpuHost is where GPU device files are looked up (a test points it at a fake tree).
type gpuHost struct {
	dev       string // /dev
	groupFile string // /etc/group
}

var realHost = gpuHost{dev: "/dev", groupFile: "/etc/group"}

var renderRE = regexp.MustCompile(`^renderD(\d+)$`)
var nvidiaRE = regexp.MustCompile(`^nvidia(\d+)$`)

// GPUError is a GPU request this node cannot satisfy (invalid input for this node).
type GPUError struct{ Msg string }

func (e *GPUError) Error() string      { return e.Msg }
func (e *GPUError) InvalidInput() bool { return true }

// SelectGPUs decides which GPUs a container gets, before any container starts: the
// vendor (auto: AMD when /dev/kfd exists, NVIDIA when /dev/nvidia0 does, else none),
// the devices the job may use (SLURM_STEP_GPUS/SLURM_JOB_GPUS, ROCR_VISIBLE_DEVICES or
// CUDA_VISIBLE_DEVICES when set) and count (0 = all). More GPUs than present is an error.
func SelectGPUs(g manifest.GPU, lookup func(string) (string, bool)) (GPUAccess, error) {
	return realHost.selectGPUs(g, lookup)
}

func (h gpuHost) selectGPUs(g manifest.GPU, lookup func(string) (string, bool)) (GPUAccess, error) {
	vendor := g.Vendor
	if vendor == manifest.VendorAuto || vendor == "" {
		switch {
		case exists(filepath.Join(h.dev, "kfd")):
			vendor = manifest.VendorAMD
		case exists(filepath.Join(h.dev, "nvidia0")):
			vendor = manifest.VendorNVIDIA
		default:
			vendor = manifest.VendorNone
		}
	}
	acc := GPUAccess{Vendor: vendor}
	if vendor == manifest.VendorNone {
		return acc, nil
	}
	var present []int
	var err error
	if vendor == manifest.VendorAMD {
		present, err = h.numbered("dri", renderRE)
	} else {
		present, err = h.numbered("", nvidiaRE)
	}
	if err != nil || len(present) == 0 {
		return acc, &GPUError{fmt.Sprintf("gpu.vendor is %s but this node has no %s GPU devices under %s", vendor, vendor, h.dev)}
	}
	idx := make([]int, len(present)) // logical indices 0..n-1
	for i := range idx {
		idx[i] = i
	}
	for _, k := range []string{"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", map[string]string{manifest.VendorAMD: "ROCR_VISIBLE_DEVICES", manifest.VendorNVIDIA: "CUDA_VISIBLE_DEVICES"}[vendor]} {
		if v, ok := lookup(k); ok && strings.TrimSpace(v) != "" {
			if idx, err = parseIndexList(v, len(present)); err != nil {
				return acc, &GPUError{fmt.Sprintf("%s=%q: %v", k, v, err)}
			}
			break
		}
	}
	if n := int(g.Count); n > 0 {
		if n > len(idx) {
			return acc, &GPUError{fmt.Sprintf("gpu.count asks for %d GPUs per node but this node has %d available (%s)", n, len(idx), vendor)}
		}
		idx = idx[:n]
	}
	ids := make([]string, len(idx))
	for i, v := range idx {
		ids[i] = strconv.Itoa(v)
	}
	switch vendor {
	case manifest.VendorAMD:
		acc.Devices = append(acc.Devices, manifest.Device{Host: filepath.Join(h.dev, "kfd"), Container: "/dev/kfd", Permissions: "rwm"})
		for _, minor := range present { // all render nodes; visibility selects
			p := filepath.Join(h.dev, "dri", "renderD"+strconv.Itoa(minor))
			acc.Devices = append(acc.Devices, manifest.Device{Host: p, Container: "/dev/dri/renderD" + strconv.Itoa(minor), Permissions: "rwm"})
		}
		for _, grp := range []string{"video", "render"} {
			if gid, ok := h.gid(grp); ok {
				acc.GroupAdd = append(acc.GroupAdd, gid)
			}
		}
		acc.Env = []manifest.EnvVar{{Name: "ROCR_VISIBLE_DEVICES", Value: strings.Join(ids, ",")}}
	case manifest.VendorNVIDIA:
		acc.Requests = []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: ids, Capabilities: [][]string{{"gpu"}}}}
		acc.Env = []manifest.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: strings.Join(ids, ",")}}
	}
	return acc, nil
}

// Describe lists the GPUs for messages and diagnostics.
func (a GPUAccess) Describe() []string {
	if a.Vendor == manifest.VendorNone || a.Vendor == "" {
		return nil
	}
	var vis string
	for _, e := range a.Env {
		vis = e.Name + "=" + e.Value
	}
	return []string{a.Vendor + " " + vis}
}

func (h gpuHost) numbered(sub string, re *regexp.Regexp) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join(h.dev, sub))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// gid finds a group's numeric id (containers need numbers: the image may lack the names).
func (h gpuHost) gid(name string) (string, bool) {
	f, err := os.Open(h.groupFile)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), ":")
		if len(parts) >= 3 && parts[0] == name {
			return parts[2], true
		}
	}
	return "", false
}

// parseIndexList reads "0,1,3" or "0-3" (Slurm style) within [0, n).
func parseIndexList(s string, n int) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= n {
			return nil, fmt.Errorf("%q is not a GPU index or range below %d", part, n)
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
