package report

import "testing"

// The report's numbers for reading: 4 significant digits, whole numbers from 1,000 up,
// digits grouped by a narrow no-break space, a point for decimals, a real minus sign.
func TestReadable(t *testing.T) {
	const sp = "\u202f"
	for _, c := range []struct {
		v    float64
		want string
	}{
		{12345.678, "12" + sp + "346"},
		{14164.3, "14" + sp + "164"},
		{1234.56, "1" + sp + "235"},
		{1234567.8, "1" + sp + "234" + sp + "568"},
		{1000, "1" + sp + "000"},
		{999.96, "1" + sp + "000"}, // rounding carries into a new digit
		{992.17, "992.2"},
		{100.5, "100.5"},
		{9.05171, "9.052"},
		{2.5, "2.5"},
		{7, "7"},
		{0.1, "0.1"},
		{0.0123456, "0.01235"},
		{0.00012346, "0.0001235"},
		{0.00001234, "1.234e-05"},
		{1e15, "1.000e+15"},
		{1.7e308, "1.700e+308"},
		{0, "0"},
		{-4.25, "\u22124.25"},
		{-12345.678, "\u221212" + sp + "346"},
		{-0.00001, "\u22121.000e-05"},
	} {
		if got := readable(c.v); got != c.want {
			t.Errorf("readable(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	for raw, want := range map[string]string{"007": "7", " 200.26 ": "200.3", "14164": "14" + sp + "164", "n/a": "n/a", "1e3": "1" + sp + "000"} {
		if got := readableRaw(raw); got != want {
			t.Errorf("readableRaw(%q) = %q, want %q", raw, got, want)
		}
	}
	for f, want := range map[float64]string{-0.0412: "\u22124.1" + sp + "%", 0.003: "+0.3" + sp + "%", 0.0004: "0.0" + sp + "%", -0.0004: "0.0" + sp + "%"} {
		if got := signedPercent(f); got != want {
			t.Errorf("signedPercent(%v) = %q, want %q", f, got, want)
		}
	}
}
