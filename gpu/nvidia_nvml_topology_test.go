//go:build cgo

package gpu

import (
	"context"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// A DGX H100's GPUs each reach the NVSwitches through 18 NVLinks; here GPUs 0 and 1 also
// have 2 direct links to each other, GPU 7 has no NVLink query (an older driver) and GPU 6
// a VBIOS query that fails.
func TestNVMLVBIOSAndNVLinks(t *testing.T) {
	s := dgxH100(t)
	busOf := func(bus string) nvml.PciInfo {
		var p nvml.PciInfo
		id := "00000000:" + bus + ":00.0"
		for j := 0; j < len(id); j++ {
			p.BusId[j] = int8(id[j])
		}
		return p
	}
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 40, nvml.SUCCESS }
		dev.GetPowerManagementLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 350000, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		dev.GetVbiosVersionFunc = func() (string, nvml.Return) {
			switch i {
			case 6:
				return "", nvml.ERROR_UNKNOWN
			case 5:
				return "", nvml.SUCCESS // an answer that says nothing: no firmware, no error
			}
			return fmt.Sprintf("96.00.74.00.%02d", i), nvml.SUCCESS
		}
		if i == 7 {
			continue // GetNvLinkState is nil: the mock panics if it is called
		}
		dev.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link >= 20 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if link == 19 {
				return nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
			if i == 2 && link == 5 { // a link in the middle that does not answer: the ones after it still count
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
			if link >= 18 && i <= 1 {
				return busOf(dgxH100Buses[1-i]), nvml.SUCCESS // the other of the pair
			}
			return busOf("C5"), nvml.SUCCESS // an NVSwitch
		}
	}
	inv, err := Snapshot(context.Background(), WithNVML(Options{Vendor: VendorNVIDIA}, s))
	if err != nil || len(inv.GPUs) != 8 {
		t.Fatalf("%v %+v", err, inv)
	}
	for i, g := range inv.GPUs {
		m := g.SMI
		switch {
		case i == 6:
			if len(m.Firmware) != 0 || len(m.Unavailable) != 1 || m.Unavailable[0] != "VBIOS version: "+nvml.ERROR_UNKNOWN.Error() {
				t.Errorf("GPU 6: %+v %q", m.Firmware, m.Unavailable)
			}
		case i == 5:
			if len(m.Firmware) != 0 || len(m.Unavailable) != 0 {
				t.Errorf("GPU 5: %+v %q", m.Firmware, m.Unavailable)
			}
		case len(m.Firmware) != 1 || m.Firmware[0] != (Firmware{Name: "VBIOS", Version: fmt.Sprintf("96.00.74.00.%02d", i)}):
			t.Errorf("GPU %d firmware: %+v", i, m.Firmware)
		}
		want := fmt.Sprint([]Link{{Peer: -1, Type: "NVLink (switch)", Count: 19}})
		switch i {
		case 2:
			want = fmt.Sprint([]Link{{Peer: -1, Type: "NVLink (switch)", Count: 18}})
		case 0, 1:
			want = fmt.Sprint([]Link{{Peer: -1, Type: "NVLink (switch)", Count: 18}, {Peer: 1 - i, Type: "NVLink", Count: 1}})
		case 7:
			want = "[]"
		}
		if got := fmt.Sprint(m.Links); got != want && !(want == "[]" && m.Links == nil) {
			t.Errorf("GPU %d links: %s, want %s", i, got, want)
		}
	}
}
