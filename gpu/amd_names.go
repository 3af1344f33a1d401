package gpu

import "fmt"

// gfxTarget turns KFD's gfx_target_version (major*10000 + minor*100 + stepping) into the
// LLVM target name: 90402 -> gfx942, 90010 -> gfx90a, 110000 -> gfx1100. Minor and stepping
// are written as one hex digit each, which is why 10 becomes "a".
func gfxTarget(v uint64) (string, error) {
	major, minor, stepping := v/10000, v/100%100, v%100
	if major == 0 || minor > 0xf || stepping > 0xf {
		return "", fmt.Errorf("gfx_target_version %d is not major*10000+minor*100+stepping with minor and stepping below 16", v)
	}
	return fmt.Sprintf("gfx%d%x%x", major, minor, stepping), nil
}

// amdNames are the marketing names of the data-centre parts by PCI device id, as the PCI
// ID database spells them (the KFD topology has ids, not names).
var amdNames = map[uint64]string{
	0x738c: "AMD Instinct MI100",
	0x738e: "AMD Instinct MI100",
	0x7408: "AMD Instinct MI250X",
	0x740c: "AMD Instinct MI250X/MI250",
	0x740f: "AMD Instinct MI210",
	0x74a0: "AMD Instinct MI300A",
	0x74a1: "AMD Instinct MI300X",
	0x74a2: "AMD Instinct MI308X",
	0x74a5: "AMD Instinct MI325X",
	0x74a9: "AMD Instinct MI300X HF",
	0x74b5: "AMD Instinct MI300X VF",
	0x74b9: "AMD Instinct MI325X VF",
	0x74bd: "AMD Instinct MI300X HF",
}

// amdName is the marketing name for a device id, or a description built from the id and
// the gfx target for parts not in the table.
func amdName(deviceID uint64, arch string) string {
	if n, ok := amdNames[deviceID]; ok {
		return n
	}
	if arch == "" {
		return fmt.Sprintf("AMD GPU [1002:%04x]", deviceID)
	}
	return fmt.Sprintf("AMD GPU [1002:%04x] %s", deviceID, arch)
}
