package models

import (
	"fmt"
	"strconv"
	"strings"
)

// gpuCount maps docker_gpus onto gpu.count: "all", or the first N GPUs ("0,1,2", "0-2").
// Other GPUs cannot be named in a manifest: the error says how benchctl selects them.
func gpuCount(s string) (string, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return "all", nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return "", fmt.Errorf(`%s is not a GPU list: write "all", or indices and ranges such as "0,1,2" or "0-3"`, strconv.Quote(short(s)))
		}
		if b-a >= 1024 || len(seen)+b-a >= 1024 {
			return "", fmt.Errorf("%s names more than 1024 GPUs", strconv.Quote(short(s)))
		}
		for n := 0; n <= b-a; n++ { // a+n, not i++ up to b: b may be the largest int
			i := a + n
			if seen[i] {
				return "", fmt.Errorf("%s names GPU %d twice", strconv.Quote(short(s)), i)
			}
			seen[i] = true
		}
	}
	for i := range len(seen) {
		if !seen[i] {
			first := fmt.Sprintf(`"0-%d" for the first %d GPUs`, len(seen)-1, len(seen))
			if len(seen) == 1 {
				first = `"0" for the first GPU`
			}
			return "", fmt.Errorf("%s picks particular GPUs, which benchctl does not take from the context: each node's container gets "+
				"the first gpu.count GPUs of those the job may use, which are Slurm's allocation (SLURM_JOB_GPUS), else ROCR_VISIBLE_DEVICES (AMD) "+
				"or CUDA_VISIBLE_DEVICES (NVIDIA) where benchctl runs, else all: set that variable to these indices (comma-separated) and leave docker_gpus out, "+
				"or give %s", strconv.Quote(short(s)), first)
		}
	}
	return strconv.Itoa(len(seen)), nil
}
