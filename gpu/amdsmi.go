package gpu

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// readAMDSMI is the AMD inventory from the library: every GPU it lists, with the facts
// only it has (SMI), joined on the PCI address with the KFD topology for the numbering
// ROCr uses, the render nodes and the KFD unique ids (joinKFD).
func readAMDSMI(ctx context.Context, opts Options) (Inventory, error) {
	l, err := openAMDSMI(opts)
	if err != nil {
		return Inventory{}, err
	}
	return runSMI(ctx, l, func(s *smiSession) (Inventory, error) { return s.inventory(opts) })
}

func (s *smiSession) inventory(opts Options) (Inventory, error) {
	hs, st := s.lib.Processors()
	if st != statusSuccess {
		return Inventory{}, s.fail("amdsmi_get_socket_handles/amdsmi_get_processor_handles", st)
	}
	if len(hs) == 0 {
		return Inventory{}, &NotFoundError{Vendor: VendorAMD, Reason: s.path + " lists no AMD GPUs"}
	}
	inv := Inventory{Vendor: VendorAMD, GPUs: []GPU{}, Runtime: rocmVersion(opts), Source: SourceAMDSMI,
		Library: "libamd_smi " + s.version + " (" + s.path + ")"}
	for _, sym := range s.lib.Missing() {
		inv.Notes = append(inv.Notes, "the library lacks "+sym+": what it reports is left out")
	}
	for i, h := range hs {
		g, driver, err := s.gpu(i, h)
		if err != nil {
			return Inventory{}, err
		}
		if inv.Driver == "" {
			inv.Driver = driver
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	var note string
	if inv.GPUs, note = joinKFD(opts, inv.GPUs); note != "" {
		inv.Notes = append(inv.Notes, note)
	}
	return inv, nil
}

// gpu reads one GPU. Its PCI address, ASIC facts and VRAM are required: a failure there
// fails the whole read (and detection falls back to sysfs). The rest is optional: a part
// or driver that does not support a query leaves the fact out; another failure is noted
// in SMI.Unavailable.
func (s *smiSession) gpu(i int, h uintptr) (g GPU, driver string, err error) {
	bdf, st := s.lib.BDF(h)
	if st != statusSuccess {
		return g, "", s.fail(fmt.Sprintf("amdsmi_get_gpu_device_bdf on GPU %d", i), st)
	}
	at := fmt.Sprintf(" on GPU %d (%s)", i, bdf)
	asic, st := s.lib.ASIC(s.abi, h)
	if st != statusSuccess {
		return g, "", s.fail("amdsmi_get_gpu_asic_info"+at, st)
	}
	total, used, st := s.lib.VRAM(h)
	if st != statusSuccess {
		return g, "", s.fail("amdsmi_get_gpu_vram_usage"+at, st)
	}
	g = GPU{Index: i, PCIBusID: normalizePCI(bdf), Arch: gfxFromSMI(asic.GfxVersion), MemoryBytes: total,
		NUMANode: -1, Devices: []string{"/dev/kfd"}, UUID: uuidFromSerial(asic.Serial)}
	g.Name = strings.TrimSpace(asic.MarketName)
	if g.Name == "" || g.Name == "N/A" {
		g.Name = amdName(asic.DeviceID, g.Arch)
	}
	smi := &SMI{MemoryUsedBytes: used, Processes: []Process{}}
	g.SMI = smi
	note := func(what string, st uint32) bool {
		switch st {
		case statusSuccess:
			return true
		case statusNotSupported, statusMissing:
		default:
			smi.Unavailable = append(smi.Unavailable, what+": "+s.status(st))
		}
		return false
	}
	if p, st := s.lib.ComputePartition(h); note("compute partition", st) {
		smi.ComputePartition = strings.TrimSpace(p)
	}
	if p, st := s.lib.MemoryPartition(h); note("memory partition", st) {
		smi.MemoryPartition = strings.TrimSpace(p)
	}
	if uw, st := s.lib.PowerCap(h); note("power cap", st) && uw > 0 {
		smi.PowerCapWatts = math.Round(float64(uw)/1e3) / 1e3
	}
	if cur, max, st := s.lib.Clock(h, false); note("gfx clock", st) {
		smi.GFXClockMHz, smi.GFXClockMaxMHz = cur, max
	}
	if cur, max, st := s.lib.Clock(h, true); note("memory clock", st) {
		smi.MemClockMHz, smi.MemClockMaxMHz = cur, max
	}
	c, st := s.lib.Temperature(h, true)
	if st == statusNotSupported { // parts without a hotspot sensor have an edge one
		c, st = s.lib.Temperature(h, false)
	}
	if note("temperature", st) {
		smi.TemperatureC = &c
	}
	if fw, st := s.lib.Firmware(s.abi, h); note("firmware", st) {
		for _, f := range fw {
			smi.Firmware = append(smi.Firmware, Firmware{Name: firmwareName(f.ID), Version: fmt.Sprintf("0x%x", f.Version)})
		}
	}
	if procs, total, st := s.lib.Processes(s.abi, h); note("processes", st) {
		smi.Processes = procs
		if total > len(procs) {
			smi.ProcessesTotal = total
		}
	}
	if d, st := s.lib.Driver(s.abi, h); note("driver", st) {
		driver = strings.TrimSpace(d)
	}
	return g, driver, nil
}

// gfxFromSMI turns asic_info's target_graphics_version into the LLVM target name. The
// library gives the target's digits read as hexadecimal (gfx942 is 0x942, gfx90a 0x90a,
// gfx1100 0x1100: amd-smi prints "gfx" + hex); a value above 0xffff is KFD's decimal
// major*10000+minor*100+stepping (90402), read as such.
func gfxFromSMI(v uint64) string {
	switch {
	case v == 0 || v == math.MaxUint64:
		return ""
	case v > 0xffff:
		arch, _ := gfxTarget(v)
		return arch
	}
	return fmt.Sprintf("gfx%x", v)
}

// uuidFromSerial is the ROCR_VISIBLE_DEVICES form of an ASIC serial ("0x3B8A1D6F2C9E4500",
// which is KFD's unique_id): GPU-3b8a1d6f2c9e4500; "" for none.
func uuidFromSerial(serial string) string {
	s := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(serial)), "0x")
	if n, err := strconv.ParseUint(s, 16, 64); err == nil && n != 0 && n != math.MaxUint64 {
		return fmt.Sprintf("GPU-%016x", n)
	}
	return ""
}

// joinKFD numbers the library's GPUs as ROCr does. amd-smi's own GPU order need not be
// ROCr's (ROCR_VISIBLE_DEVICES counts KFD topology nodes), so when the KFD topology lists
// exactly the library's GPUs, each takes its KFD index, unique id, render node and NUMA
// node from there, and an architecture the library did not give. Otherwise the library's
// order stands, the render nodes come from /sys/bus/pci, and the note says so.
func joinKFD(opts Options, gpus []GPU) ([]GPU, string) {
	kfd, err := readKFD(opts)
	byPCI := map[string]GPU{}
	if err == nil {
		for _, k := range kfd.GPUs {
			byPCI[k.PCIBusID] = k
		}
	}
	joined := err == nil && len(kfd.GPUs) == len(gpus)
	for _, g := range gpus {
		if _, ok := byPCI[g.PCIBusID]; !ok {
			joined = false
		}
	}
	if !joined {
		for i := range gpus {
			g := &gpus[i]
			g.NUMANode = numaNode(opts, g.PCIBusID)
			if r := pciRenderNode(opts, g.PCIBusID); r != "" {
				g.RenderNode = r
				g.Devices = append(g.Devices, r)
			}
		}
		if err != nil {
			return gpus, "GPU indices follow the library's order: " + reason(err)
		}
		return gpus, fmt.Sprintf("GPU indices follow the library's order: the KFD topology lists %d GPUs, not the library's %d at the same PCI addresses", len(kfd.GPUs), len(gpus))
	}
	for i := range gpus {
		g, k := &gpus[i], byPCI[gpus[i].PCIBusID]
		g.Index, g.RenderNode, g.Devices, g.NUMANode = k.Index, k.RenderNode, k.Devices, k.NUMANode
		g.UUID = firstString(k.UUID, g.UUID)
		g.Arch = firstString(g.Arch, k.Arch)
		if g.MemoryBytes == 0 {
			g.MemoryBytes = k.MemoryBytes
		}
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	return gpus, ""
}

// firmwareNames are amdsmi_fw_block_t's names by value (the same values in 24.6 and 26.x;
// 26.x adds PLDM_BUNDLE), without the AMDSMI_FW_ID_ prefix, as amd-smi prints them.
var firmwareNames = []string{1: "SMU", "CP_CE", "CP_PFP", "CP_ME", "CP_MEC_JT1", "CP_MEC_JT2", "CP_MEC1", "CP_MEC2",
	"RLC", "SDMA0", "SDMA1", "SDMA2", "SDMA3", "SDMA4", "SDMA5", "SDMA6", "SDMA7", "VCN", "UVD", "VCE", "ISP",
	"DMCU_ERAM", "DMCU_ISR", "RLC_RESTORE_LIST_GPM_MEM", "RLC_RESTORE_LIST_SRM_MEM", "RLC_RESTORE_LIST_CNTL", "RLC_V",
	"MMSCH", "PSP_SYSDRV", "PSP_SOSDRV", "PSP_TOC", "PSP_KEYDB", "DFC", "PSP_SPL", "DRV_CAP", "MC", "PSP_BL", "CP_PM4",
	"RLC_P", "SEC_POLICY_STAGE2", "REG_ACCESS_WHITELIST", "IMU_DRAM", "IMU_IRAM", "SDMA_TH0", "SDMA_TH1", "CP_MES",
	"MES_KIQ", "MES_STACK", "MES_THREAD1", "MES_THREAD1_STACK", "RLX6", "RLX6_DRAM_BOOT", "RS64_ME", "RS64_ME_P0_DATA",
	"RS64_ME_P1_DATA", "RS64_PFP", "RS64_PFP_P0_DATA", "RS64_PFP_P1_DATA", "RS64_MEC", "RS64_MEC_P0_DATA",
	"RS64_MEC_P1_DATA", "RS64_MEC_P2_DATA", "RS64_MEC_P3_DATA", "PPTABLE", "PSP_SOC", "PSP_DBG", "PSP_INTF",
	"RLX6_CORE1", "RLX6_DRAM_BOOT_CORE1", "RLCV_LX7", "RLC_SAVE_RESTORE_LIST", "ASD", "TA_RAS", "TA_XGMI", "RLC_SRLG",
	"RLC_SRLS", "PM", "DMCU", "PLDM_BUNDLE"}

func firmwareName(id uint32) string {
	if int(id) < len(firmwareNames) && firmwareNames[id] != "" {
		return firmwareNames[id]
	}
	return "FW_" + strconv.FormatUint(uint64(id), 10)
}
