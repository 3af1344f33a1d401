package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadReferences(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "refs.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	refs, err := LoadReferences(write(`metrics:
  tps: {better: higher, tolerance: 3%}
references:
  - {model: llama, metric: tps, value: 1234.5, lower: -5%, upper: +10%}
  - {model: ar, metric: GB/s, key: {size_bytes: "64"}, variant: "batch=1", value: 7}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs.Rules) != 1 || len(refs.References) != 2 || refs.References[0].Value != 1234.5 || *refs.References[0].Lower != -5 || *refs.References[0].Upper != 10 ||
		refs.References[1].Lower != nil || refs.References[1].Key["size_bytes"] != "64" {
		t.Fatalf("%+v", refs)
	}
	if s := refs.References[1].String(); s != "ar GB/s [size_bytes=64 batch=1] = 7" {
		t.Errorf("String: %s", s)
	}
	for body, want := range map[string]string{
		"references: [{model: a, metric: b}]\n":                          "references[0].value: is required",
		"references: [{model: a, value: 1}]\n":                           "references[0]: needs model and metric",
		"references: [{model: a, metric: b, value: lots}]\n":             "references[0].value: must be a number",
		"references: [{model: a, metric: b, value: 1, lower: 5%}]\n":     "references[0].lower: 5% is above the value",
		"references: [{model: a, metric: b, value: 1, upper: -5%}]\n":    "references[0].upper: -5% is below the value",
		"references: [{model: a, metric: b, value: 1, lower: -5000%}]\n": "must be a percentage such as -5%",
		"references: [{model: a, metric: b, value: 1, bound: 3}]\n":      `references[0].bound: unknown field`,
		"other: 1\n":                     `other: unknown field`,
		"{}\n":                           "holds neither metrics: nor references:",
		"- a\n":                          "a references file is a mapping",
		"metrics: {tps: {better: up}}\n": `metrics.tps.better: "up" is not a direction`,
	} {
		if _, err := LoadReferences(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if _, err := LoadReferences(filepath.Join(dir, "none.yaml")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}
