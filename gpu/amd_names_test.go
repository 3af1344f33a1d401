package gpu

import "testing"

func TestGfxTarget(t *testing.T) {
	cases := []struct {
		v    uint64
		want string
	}{
		{90402, "gfx942"},
		{90010, "gfx90a"},
		{90008, "gfx908"},
		{90500, "gfx950"},
		{90006, "gfx906"},
		{100300, "gfx1030"},
		{110000, "gfx1100"},
		{110501, "gfx1151"},
		{120001, "gfx1201"},
		{90015, "gfx90f"},
	}
	for _, c := range cases {
		got, err := gfxTarget(c.v)
		if err != nil || got != c.want {
			t.Errorf("gfxTarget(%d) = %q, %v; want %q", c.v, got, err, c.want)
		}
	}
	for _, bad := range []uint64{0, 42, 91600, 90016} {
		if got, err := gfxTarget(bad); err == nil {
			t.Errorf("gfxTarget(%d) = %q, want an error", bad, got)
		}
	}
}

func TestAMDName(t *testing.T) {
	if got := amdName(0x74a1, "gfx942"); got != "AMD Instinct MI300X" {
		t.Errorf("0x74a1: %q", got)
	}
	if got := amdName(0x1234, "gfx1201"); got != "AMD GPU [1002:1234] gfx1201" {
		t.Errorf("unknown id: %q", got)
	}
	if got := amdName(0x1234, ""); got != "AMD GPU [1002:1234]" {
		t.Errorf("unknown id, no arch: %q", got)
	}
}

func TestPCI(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:18:00.0": "0000:18:00.0",
		"00000001:AB:1F.7": "0001:ab:1f.7",
		"0000:0c:00.0":     "0000:0c:00.0",
		"not a bdf":        "not a bdf",
		"":                 "",
	} {
		if got := normalizePCI(in); got != want {
			t.Errorf("normalizePCI(%q) = %q, want %q", in, got, want)
		}
	}
	// bus 0xc1, device 0x1f, function 3 in domain 2
	if got := pciFromLocation(2, 0xc1<<8|0x1f<<3|3); got != "0002:c1:1f.3" {
		t.Errorf("pciFromLocation: %q", got)
	}
}
