package runner

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/manifest"
)

func fakeAMD(t *testing.T, gpus int) gpuHost {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "dri"), 0o755)
	os.WriteFile(filepath.Join(dir, "kfd"), nil, 0o644)
	for i := 0; i < gpus; i++ {
		os.WriteFile(filepath.Join(dir, "dri", "renderD"+strconv.Itoa(128+i)), nil, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "group"), []byte("root:x:0:\nvideo:x:44:\nrender:x:110:\n"), 0o644)
	return gpuHost{dev: dir, groupFile: filepath.Join(dir, "group")}
}

func TestSelectGPUsAMD(t *testing.T) {
	h := fakeAMD(t, 8)
	acc, err := h.selectGPUs(manifest.GPU{Vendor: "auto", Count: 2}, lookupOf(map[string]string{"SLURM_JOB_GPUS": "4-7"}))
	if err != nil {
		t.Fatal(err)
	}
	if acc.Vendor != "amd" || len(acc.Devices) != 9 || acc.Env[0].Value != "4,5" || strings.Join(acc.GroupAdd, ",") != "44,110" {
		t.Fatalf("%+v", acc)
	}
	if _, err := h.selectGPUs(manifest.GPU{Vendor: "amd", Count: 9}, lookupOf(nil)); err == nil || !strings.Contains(err.Error(), "asks for 9 GPUs per node but this node has 8") {
		t.Fatalf("too many: %v", err)
	}
	if _, err := h.selectGPUs(manifest.GPU{Vendor: "amd"}, lookupOf(map[string]string{"ROCR_VISIBLE_DEVICES": "9"})); err == nil || !strings.Contains(err.Error(), "ROCR_VISIBLE_DEVICES") {
		t.Fatalf("bad visible: %v", err)
	}
	if _, err := h.selectGPUs(manifest.GPU{Vendor: "nvidia"}, lookupOf(nil)); err == nil {
		t.Fatal("nvidia on an AMD node accepted")
	}
	none, err := (gpuHost{dev: t.TempDir()}).selectGPUs(manifest.GPU{Vendor: "auto"}, lookupOf(nil))
	if err != nil || none.Vendor != "none" {
		t.Fatalf("auto without GPUs: %+v %v", none, err)
	}
}
