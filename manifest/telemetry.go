package manifest

import (
	"strings"
	"time"

	"github.com/benchctl/benchctl/manifest/document"
)

// Telemetry is how each node samples its GPUs while a benchmark's container runs.
type Telemetry struct {
	// Off turns sampling off (telemetry: off).
	Off bool `json:"off,omitempty" yaml:"off,omitempty"`
	// Interval is the time between samples; 0 is the default (DefaultTelemetryInterval).
	Interval Duration `json:"interval,omitempty" yaml:"interval,omitempty"`
}

// Telemetry interval bounds and default: 100 ms is as often as the libraries' counters
// change; an hour is as seldom as still says something about a run.
const (
	DefaultTelemetryInterval = time.Second
	MinTelemetryInterval     = 100 * time.Millisecond
	MaxTelemetryInterval     = time.Hour
)

// Every is the sampling interval: the manifest's, else the default; 0 when sampling is off.
func (t Telemetry) Every() time.Duration {
	switch {
	case t.Off:
		return 0
	case t.Interval == 0:
		return DefaultTelemetryInterval
	}
	return time.Duration(t.Interval)
}

// TelemetrySpec is the manifest's telemetry: as written: off (or false), or
// {interval: 1s} (interval off turns it off too).
type TelemetrySpec struct {
	Off      bool
	Interval time.Duration
	Set      bool
}

const telemetryHint = `write telemetry: {interval: 1s} (from 100ms to 1h), or telemetry: off`

func (t *TelemetrySpec) DecodeNode(d *document.Decoder, n *document.Node, fp string) {
	switch {
	case n.Kind == document.NullNode:
		return
	case isOff(n):
		t.Off, t.Set = true, true
		return
	case n.Kind != document.MapNode:
		d.Problems.At(n.Line, fp, "must be off or a mapping such as {interval: 1s}, got %s: %s", n.Describe(), telemetryHint)
		return
	}
	t.Set = true
	for i, k := range n.Keys {
		kfp := document.Join(fp, k.Value)
		d.Problems.SetLineOnce(kfp, k.Line)
		v := n.Items[i]
		if k.Value != "interval" {
			d.Problems.At(k.Line, kfp, "is not a field of telemetry (it has interval only): %s", telemetryHint)
			continue
		}
		if isOff(v) {
			t.Off = true
			continue
		}
		var ds DurationSpec
		before := d.Problems.Count()
		ds.DecodeNode(d, v, kfp)
		if d.Problems.Count() > before {
			continue
		}
		if ds.D < MinTelemetryInterval || ds.D > MaxTelemetryInterval {
			d.Problems.At(v.Line, kfp, "%s is out of range: give %s to %s (or off)", document.Quote(ds.D.String()), MinTelemetryInterval, MaxTelemetryInterval)
			continue
		}
		t.Interval = ds.D
	}
}

// isOff reports whether n says off: the word, or false.
func isOff(n *document.Node) bool {
	return n.Kind == document.ScalarNode && ((n.Tag == document.TagStr && n.Value == "off") || (n.Tag == document.TagBool && !strings.EqualFold(n.Value, "true")))
}

func (s TelemetrySpec) resolve() Telemetry {
	return Telemetry{Off: s.Off, Interval: Duration(s.Interval)}
}
