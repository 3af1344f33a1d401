package podman

import (
	"io/fs"

	"github.com/benchctl/benchctl/runner/cleanup"
)

// LabelJob is the job's label on the helper container NumericUser makes.
const LabelJob = cleanup.LabelJob

func filesOf(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}
