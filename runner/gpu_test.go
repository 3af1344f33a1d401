package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
	"github.com/benchctl/benchctl/internal/testutil"
	"github.com/benchctl/benchctl/manifest"
)

func TestSelectGPUsOnARecordedMI300X(t *testing.T) {
	root, _ := filepath.Abs("../tests/fixtures/sysfs/mi300x")
	groups := filepath.Join(t.TempDir(), "group")
	os.WriteFile(groups, []byte("root:x:0:\nvideo:x:44:\nrender:x:110:\n"), 0o644)
	opts := gpu.Options{SysfsRoot: root}
	acc, err := selectGPUs(manifest.GPU{Vendor: "auto", Count: 2}, testutil.LookupOf(map[string]string{"SLURM_JOB_GPUS": "4-7"}), opts, groups)
	if err != nil {
		t.Fatal(err)
	}
	// /dev/kfd and the render nodes of GPUs 4 and 5 only (KFD nodes 6 and 7), not every
	// renderD* of the node; the tree has no /dev, so the groups are video's and render's.
	var devs []string
	for _, d := range acc.Devices {
		devs = append(devs, d.Host+":"+d.Container+":"+d.Permissions)
	}
	if acc.Vendor != "amd" || strings.Join(devs, " ") != "/dev/kfd:/dev/kfd:rwm /dev/dri/renderD132:/dev/dri/renderD132:rwm /dev/dri/renderD133:/dev/dri/renderD133:rwm" ||
		acc.Env[0].Value != "0,1" || strings.Join(acc.GroupAdd, ",") != "44,110" || len(acc.GPUs) != 2 {
		t.Fatalf("devices %v, %+v", devs, acc)
	}
	if _, err := selectGPUs(manifest.GPU{Vendor: "amd", Count: 9}, testutil.LookupOf(nil), opts, groups); err == nil || !strings.Contains(err.Error(), "9") {
		t.Fatalf("too many GPUs: %v", err)
	}
	if _, err := selectGPUs(manifest.GPU{Vendor: "nvidia"}, testutil.LookupOf(nil), opts, groups); err == nil {
		t.Fatal("nvidia on an AMD node accepted")
	}
	empty := gpu.Options{SysfsRoot: t.TempDir()}
	if _, err := selectGPUs(manifest.GPU{Vendor: "auto", Count: 4}, testutil.LookupOf(nil), empty, groups); err == nil || !strings.Contains(err.Error(), "asks for 4 GPUs per node but this node has none") {
		t.Fatalf("4 GPUs on a node without any: %v", err)
	}
	if acc, err := selectGPUs(manifest.GPU{Vendor: "auto"}, testutil.LookupOf(nil), empty, groups); err != nil || acc.Vendor != "none" {
		t.Fatalf("all GPUs of a node without any: %+v %v", acc, err)
	}
	none, err := selectGPUs(manifest.GPU{Vendor: "none"}, testutil.LookupOf(nil), opts, groups)
	if err != nil || none.Vendor != "none" || none.Describe() != nil {
		t.Fatalf("none: %+v %v", none, err)
	}
}
