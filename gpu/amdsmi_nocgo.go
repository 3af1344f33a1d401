//go:build !cgo || !linux

package gpu

import "errors"

// dlopenAMDSMI needs cgo (dlopen) on Linux; other builds read AMD GPUs from sysfs or the CLI.
func dlopenAMDSMI(string) (smiLib, error) {
	return nil, errors.New("this benchctl was built without cgo, so it cannot load libamd_smi (CGO_ENABLED=0)")
}
