package runner

import (
	"io"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/logscan"
	"github.com/benchctl/benchctl/manifest"
)

// Which rules a benchmark's log is scanned with: as in madengine, the run's settings (the
// manifest's logScan) win over a MAD model's log_error_patterns, which replace the defaults;
// the model's log_error_benign_patterns are ignored besides the manifest's or the default
// benign lines; log_error_pattern_scan: false and logScan.enabled: false turn it off.
func TestLogScannerRules(t *testing.T) {
	const log = "step 1\nRuntimeError: benign in this model\nmy-model-died\nWARN: flaky but fine: CUDA out of memory\n"
	for _, c := range []struct {
		name  string
		scan  manifest.LogScan
		bench manifest.Benchmark
		want  string // the matched pattern, "" for none, "off" for no scanner
	}{
		{"defaults", manifest.LogScan{}, manifest.Benchmark{}, "RuntimeError:"},
		{"model's own errors replace the defaults", manifest.LogScan{}, manifest.Benchmark{LogErrors: []string{"my-model-died"}}, "my-model-died"},
		{"manifest's errors win over the model's", manifest.LogScan{Errors: []string{"CUDA out of memory"}}, manifest.Benchmark{LogErrors: []string{"my-model-died"}}, "CUDA out of memory"},
		{"model's benign lines are ignored too", manifest.LogScan{}, manifest.Benchmark{LogBenign: []string{"benign in this model", "flaky but fine"}}, ""},
		{"model's benign added to the manifest's", manifest.LogScan{Errors: []string{"CUDA out of memory", "RuntimeError:"}, Benign: []string{"WARN:"}},
			manifest.Benchmark{LogBenign: []string{"benign in this model"}}, ""},
		{"model switched off", manifest.LogScan{}, manifest.Benchmark{NoLogScan: true, LogErrors: []string{"x"}}, "off"},
		{"manifest switched off", manifest.LogScan{Disabled: true}, manifest.Benchmark{}, "off"},
	} {
		s := logScanner(c.scan, c.bench)
		if s == nil {
			if c.want != "off" {
				t.Errorf("%s: no scanner", c.name)
			}
			continue
		}
		io.Copy(s, strings.NewReader(log))
		got := ""
		if m := s.Match(); m != nil {
			got = m.Pattern
		}
		if got != c.want {
			t.Errorf("%s: matched %q, want %q", c.name, got, c.want)
		}
	}
	if d := logscan.Defaults(); len(d.Benign) != len(logscan.DefaultBenign) {
		t.Errorf("the defaults changed: %d benign", len(d.Benign))
	}
}

// madengine's own default patterns (Exception:, SystemExit, ...) apply to MAD models only:
// a manifest's own benchmark printing "Exception: none" passes with the defaults, a MAD
// model printing it fails, and either fails on the shared defaults (RuntimeError:).
func TestLogScannerMadengineDefaultsForModelsOnly(t *testing.T) {
	mad := manifest.Benchmark{Model: &manifest.Model{Name: "m"}}
	for _, c := range []struct {
		name  string
		bench manifest.Benchmark
		log   string
		want  string
	}{
		{"native, Exception:", manifest.Benchmark{}, "Exception: none\n", ""},
		{"native, SystemExit", manifest.Benchmark{}, "SystemExit\n", ""},
		{"native, RuntimeError:", manifest.Benchmark{}, "RuntimeError: x\n", "RuntimeError:"},
		{"MAD model, Exception:", mad, "Exception: none\n", "Exception:"},
		{"MAD model, ModuleNotFoundError:", mad, "ModuleNotFoundError: vllm\n", "ModuleNotFoundError:"},
		{"MAD model, FutureWarning benign", mad, "FutureWarning: Exception: old\n", ""},
	} {
		s := logScanner(manifest.LogScan{}, c.bench)
		io.Copy(s, strings.NewReader(c.log))
		got := ""
		if m := s.Match(); m != nil {
			got = m.Pattern
		}
		if got != c.want {
			t.Errorf("%s: matched %q, want %q", c.name, got, c.want)
		}
	}
}
