package gpu

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// node8 is an inventory of 8 GPUs with UUIDs GPU-aaaa0000-... to GPU-aaaa0007-...
func node8(vendor string) Inventory {
	inv := Inventory{Vendor: vendor}
	for i := 0; i < 8; i++ {
		inv.GPUs = append(inv.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-aaaa%04d-1111-2222-3333-44444444444%d", i, i)})
	}
	return inv
}

func indices(gs []GPU) []int {
	out := []int{}
	for _, g := range gs {
		out = append(out, g.Index)
	}
	return out
}

func TestSelect(t *testing.T) {
	nv, amd := node8(VendorNVIDIA), node8(VendorAMD)
	cases := []struct {
		name    string
		inv     Inventory
		count   int
		env     map[string]string
		want    []int
		wantErr string
	}{
		{"all", nv, 0, nil, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"first count", amd, 4, nil, []int{0, 1, 2, 3}, ""},
		{"too many", amd, 9, nil, nil, "9 GPUs requested but only 8 available (this node has 8 AMD GPUs)"},
		{"negative count", amd, -1, nil, nil, "GPU count -1 is negative"},
		{"job gpus with ranges", nv, 0, map[string]string{"SLURM_JOB_GPUS": "0-3,6"}, []int{0, 1, 2, 3, 6}, ""},
		{"step gpus win over job gpus", nv, 0, map[string]string{"SLURM_STEP_GPUS": "4,5", "SLURM_JOB_GPUS": "0-7"}, []int{4, 5}, ""},
		{"slurm wins over CUDA_VISIBLE_DEVICES", nv, 0, map[string]string{"SLURM_JOB_GPUS": "1", "CUDA_VISIBLE_DEVICES": "0"}, []int{1}, ""},
		{"slurm then count", amd, 2, map[string]string{"SLURM_JOB_GPUS": "4-7"}, []int{4, 5}, ""},
		{"slurm too few", amd, 3, map[string]string{"SLURM_JOB_GPUS": "2,3"}, nil,
			"3 GPUs requested but only 2 available (SLURM_JOB_GPUS=2,3; this node has 8 AMD GPUs)"},
		{"slurm index not on node", amd, 0, map[string]string{"SLURM_JOB_GPUS": "6-9"}, nil, `SLURM_JOB_GPUS="6-9": GPU 8 is not there (GPUs 0-7)`},
		{"slurm repeated", amd, 0, map[string]string{"SLURM_JOB_GPUS": "1,0-2"}, nil, "names GPU 1 twice"},
		{"slurm backwards range", amd, 0, map[string]string{"SLURM_JOB_GPUS": "3-1"}, nil, `"3-1" is not a GPU index or range`},
		{"slurm uuid", nv, 0, map[string]string{"SLURM_JOB_GPUS": "GPU-aaaa0001"}, nil, "is not a GPU index or range"},
		{"empty values are unset", nv, 0, map[string]string{"SLURM_STEP_GPUS": " ", "CUDA_VISIBLE_DEVICES": ""}, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"cuda order kept", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "3,1"}, []int{3, 1}, ""},
		{"cuda full uuid any case", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "gpu-AAAA0005-1111-2222-3333-444444444445,0"}, []int{5, 0}, ""},
		{"cuda unique uuid prefix", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-aaaa0006"}, []int{6}, ""},
		{"cuda ambiguous prefix", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-aaaa"}, nil, `"GPU-aaaa" is the start of 8 GPUs' UUIDs`},
		{"cuda unknown uuid", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-ffff"}, nil, `no GPU has UUID "GPU-ffff"`},
		{"cuda MIG", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "MIG-1234"}, nil, "is a MIG instance"},
		{"cuda no ranges", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "0-3"}, nil, `"0-3" is not a GPU index or UUID`},
		{"cuda index not on node", nv, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "8"}, nil, "GPU 8 is not there (GPUs 0-7)"},
		{"cuda then count too many", nv, 3, map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}, nil,
			"3 GPUs requested but only 2 available (CUDA_VISIBLE_DEVICES=0,1; this node has 8 NVIDIA GPUs)"},
		{"cuda ignored on AMD", amd, 0, map[string]string{"CUDA_VISIBLE_DEVICES": "0"}, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"rocr ignored on NVIDIA", nv, 0, map[string]string{"ROCR_VISIBLE_DEVICES": "0"}, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"rocr indices", amd, 0, map[string]string{"ROCR_VISIBLE_DEVICES": "7,6"}, []int{7, 6}, ""},
		{"rocr uuid", amd, 0, map[string]string{"ROCR_VISIBLE_DEVICES": "GPU-aaaa0002-1111-2222-3333-444444444442"}, []int{2}, ""},
		{"hip alone", amd, 0, map[string]string{"HIP_VISIBLE_DEVICES": "2"}, []int{2}, ""},
		{"hip counts what rocr left", amd, 0, map[string]string{"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "1,3"}, []int{5, 7}, ""},
		{"hip past rocr", amd, 0, map[string]string{"ROCR_VISIBLE_DEVICES": "4,5", "HIP_VISIBLE_DEVICES": "2"}, nil, `HIP_VISIBLE_DEVICES="2": GPU 2 is not there (GPUs 0-1)`},
		{"rocr and hip too few", amd, 2, map[string]string{"ROCR_VISIBLE_DEVICES": "4,5", "HIP_VISIBLE_DEVICES": "1"}, nil,
			"2 GPUs requested but only 1 available (ROCR_VISIBLE_DEVICES=4,5, HIP_VISIBLE_DEVICES=1; this node has 8 AMD GPUs)"},
		{"no gpus, none asked", Inventory{Vendor: VendorNone}, 0, nil, []int{}, ""},
		{"no gpus, one asked", Inventory{Vendor: VendorNone}, 1, nil, nil, "1 GPU requested but only 0 available (this node has no GPUs)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Select(c.inv, c.count, c.env)
			if c.wantErr != "" {
				var se *SelectError
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.As(err, &se) || !se.InvalidInput() {
					t.Fatalf("err = %v, want a *SelectError containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(indices(got), c.want) {
				t.Fatalf("got GPUs %v, want %v", indices(got), c.want)
			}
		})
	}
}

func TestSelectDoesNotAliasTheInventory(t *testing.T) {
	inv := node8(VendorAMD)
	got, err := Select(inv, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, GPU{Index: 99})
	if inv.GPUs[2].Index != 2 {
		t.Fatalf("appending to Select's result changed the inventory: %+v", inv.GPUs[2])
	}
	_ = got
}
