package jobdir

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// TelemetryFolder is the folder of a node folder that holds what the node's GPUs did
// during each run: telemetry/<run>.jsonl (the time series) and telemetry/<run>.json (its
// summary), where run is a benchmark's name or a trial's run name (TrialRunName).
const TelemetryFolder = "telemetry"

// TelemetryVersion is the schema version of the telemetry files.
const TelemetryVersion = 1

// Sizes that bound the telemetry files (see TelemetryLevelRows for the series' rows).
const (
	MaxTelemetrySummarySize = 4 << 20  // a summary: a few hundred bytes per GPU
	MaxTelemetrySeriesSize  = 64 << 20 // a series: the writer stops adding rows before this
	// TelemetryLevelRows is how many rows of one GPU the series holds at one resolution:
	// the first TelemetryLevelRows samples of a GPU are a row each; then rows stand for 2
	// samples each, for the next TelemetryLevelRows rows, then 4, and so on. A series of S
	// samples a GPU thus has about TelemetryLevelRows × (1 + log2(S / TelemetryLevelRows))
	// rows: 7,502 for 48 hours at 1 s, 10,905 at 100 ms.
	TelemetryLevelRows = 1024
)

// TelemetryRel is the series of run, relative to the node folder.
func TelemetryRel(run string) string { return filepath.Join(TelemetryFolder, run+".jsonl") }

// TelemetrySummaryRel is the summary of run's series, relative to the node folder.
func TelemetrySummaryRel(run string) string { return filepath.Join(TelemetryFolder, run+".json") }

// Telemetry is run's series in this node folder.
func (n NodeDir) Telemetry(run string) string { return filepath.Join(n.Path, TelemetryRel(run)) }

// TelemetrySummary is the summary of run's series in this node folder.
func (n NodeDir) TelemetrySummary(run string) string {
	return filepath.Join(n.Path, TelemetrySummaryRel(run))
}

// TelemetryHeader is the first line of a series: what was sampled, how often, from where.
type TelemetryHeader struct {
	Telemetry int            `json:"telemetry"` // TelemetryVersion
	Run       string         `json:"run"`
	Source    string         `json:"source"`   // nvml, amdsmi, sysfs; "" when nothing could be sampled
	Interval  string         `json:"interval"` // the time between samples, as a duration
	Start     time.Time      `json:"start"`
	GPUs      []TelemetryGPU `json:"gpus"`
}

// TelemetryGPU is one sampled GPU.
type TelemetryGPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name,omitempty"`
}

// TelemetryRow is one line of a series after the header: one GPU over [T, T+DT) seconds
// from the header's start, N samples folded into it. Values are the means of the samples
// that had them (Max* the largest); a field no sample had is left out. EnergyJ is the
// GPU's energy since the start, at the row's last sample.
type TelemetryRow struct {
	T   float64 `json:"t"`
	DT  float64 `json:"dt"`
	GPU int     `json:"gpu"`
	N   int     `json:"n"`

	PowerW     *float64 `json:"power_w,omitempty"`
	MaxPowerW  *float64 `json:"power_max_w,omitempty"`
	EnergyJ    *float64 `json:"energy_j,omitempty"`
	GFXMHz     *float64 `json:"gfx_mhz,omitempty"`
	MinGFXMHz  *float64 `json:"gfx_min_mhz,omitempty"`
	MemMHz     *float64 `json:"mem_mhz,omitempty"`
	TempC      *float64 `json:"temp_c,omitempty"`
	MaxTempC   *float64 `json:"temp_max_c,omitempty"`
	UtilPct    *float64 `json:"util_pct,omitempty"`
	MemUsed    *uint64  `json:"mem_used,omitempty"`   // the most memory in use, bytes
	Throttled  int      `json:"throttled,omitempty"`  // samples with a power, thermal or reliability limit active
	Throttle   int      `json:"throttle_n,omitempty"` // samples that said whether one was
	Reasons    string   `json:"reasons,omitempty"`    // every reason seen, "power+thermal"
	Error      string   `json:"error,omitempty"`      // the GPU did not answer (its last error)
	Unanswered int      `json:"unanswered,omitempty"` // samples the GPU did not answer
	Note       string   `json:"note,omitempty"`       // set on a note line instead of values (see TelemetryNote)
	Field      string   `json:"field,omitempty"`      // a note's field
	Stopped    bool     `json:"stopped,omitempty"`    // the last line when the series was cut at MaxTelemetrySeriesSize
	Level      int      `json:"level,omitempty"`      // the row stands for 2^Level samples (the last one may hold fewer)
}

// TelemetryNote is a fact that could not be sampled, and why: said once per GPU and field.
type TelemetryNote struct {
	GPU   int    `json:"gpu"` // -1 for every GPU
	Field string `json:"field"`
	Why   string `json:"why"`
}

// TelemetrySummary is telemetry/<run>.json: the series summed up, written when the run
// ends. collect reads it; the series is read only for the report's timeline.
type TelemetrySummary struct {
	Telemetry int       `json:"telemetry"` // TelemetryVersion
	Run       string    `json:"run"`
	Source    string    `json:"source"`
	Interval  string    `json:"interval"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Samples   int       `json:"samples"` // sampling rounds (each reads every GPU)
	// Unavailable lists what could not be sampled, and why; with no GPU at all (a node
	// without GPUs, a build without the library) it is the one reason and GPUs is empty.
	Unavailable []TelemetryNote    `json:"unavailable"`
	GPUs        []TelemetryGPUStat `json:"gpus"`
	Rows        int                `json:"rows"`              // lines of the series after the header
	Stopped     bool               `json:"stopped,omitempty"` // the series was cut at MaxTelemetrySeriesSize (the summary still counts every sample)
}

// TelemetryGPUStat is one GPU over a whole run. Nil fields: no sample had the fact.
type TelemetryGPUStat struct {
	TelemetryGPU
	Samples int `json:"samples"` // samples the GPU answered
	// EnergyJ is the GPU's energy over the run; EnergyFrom says how it was measured:
	// "counter" (the device's energy counter), "power" (power integrated over time) or
	// "counter+power" (the counter, with power where it went backwards or was missing).
	EnergyJ    *float64 `json:"energyJ,omitempty"`
	EnergyFrom string   `json:"energyFrom,omitempty"`
	AvgPowerW  *float64 `json:"avgPowerW,omitempty"`
	PeakPowerW *float64 `json:"peakPowerW,omitempty"`
	AvgGFXMHz  *float64 `json:"avgGfxMHz,omitempty"`
	MinGFXMHz  *float64 `json:"minGfxMHz,omitempty"`
	AvgMemMHz  *float64 `json:"avgMemMHz,omitempty"`
	MaxTempC   *float64 `json:"maxTempC,omitempty"`
	AvgUtilPct *float64 `json:"avgUtilPct,omitempty"`
	MaxMemUsed *uint64  `json:"maxMemUsed,omitempty"`
	// Throttled counts the samples with a power, thermal or reliability limit active, out
	// of ThrottleKnown samples that said; Reasons are every reason seen.
	Throttled     int    `json:"throttled"`
	ThrottleKnown int    `json:"throttleKnown"`
	Reasons       string `json:"reasons,omitempty"`
	Unanswered    int    `json:"unanswered,omitempty"` // samples the GPU did not answer
}

// CreateTelemetry creates run's series in the node folder (the telemetry folder made
// on the way), a regular file of its own, never a link or FIFO found there.
func (n *NodeFolder) CreateTelemetry(run string) (*os.File, error) {
	dir, err := n.MkdirAll(TelemetryFolder, 0o755)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return safefile.CreateAt(dir, run+".jsonl", 0o644)
}

// WriteTelemetrySummary writes run's summary atomically through the node folder.
func (n *NodeFolder) WriteTelemetrySummary(s *TelemetrySummary) error {
	dir, err := n.MkdirAll(TelemetryFolder, 0o755)
	if err != nil {
		return err
	}
	defer dir.Close()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", n.TelemetrySummary(s.Run), err)
	}
	return atomicfile.WriteFileAt(dir, s.Run+".json", append(data, '\n'), 0o644)
}

// ReadTelemetrySummary reads a run's summary (bounded, never a link or FIFO). A summary of
// another schema version is an error naming it.
func ReadTelemetrySummary(r *safefile.Reader, path string) (*TelemetrySummary, error) {
	data, err := r.ReadNoFollow(path, MaxTelemetrySummarySize)
	if err != nil {
		return nil, err
	}
	var s TelemetrySummary
	if err := decodeFile(path, data, &s); err != nil {
		return nil, err
	}
	if s.Telemetry != TelemetryVersion {
		return nil, fmt.Errorf("reading %s: telemetry schema %d, this benchctl reads %d", path, s.Telemetry, TelemetryVersion)
	}
	return &s, nil
}

// ReadTelemetrySeries reads a run's series, rel beneath root (the job or node folder: no
// link on the way may lead out of it, and the file is no link or FIFO), line by line
// (bounded by MaxTelemetrySeriesSize), calling row for each row that is not a note, in file
// order. A damaged line ends the reading with an error naming its line; what was read
// before stands. A row with a number out of range (a negative time, a power no GPU draws:
// TelemetryRow.check) is left out, and the error at the end says how many and the first.
func ReadTelemetrySeries(root, rel string, row func(TelemetryRow)) (*TelemetryHeader, error) {
	path := filepath.Join(root, rel)
	f, err := safefile.OpenBeneath(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, MaxTelemetrySeriesSize))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var h TelemetryHeader
	line, bad, first := 0, 0, ""
	for sc.Scan() {
		line++
		if line == 1 {
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Telemetry == 0 {
				return nil, fmt.Errorf("reading %s: line 1 is not a telemetry header", path)
			}
			if h.Telemetry != TelemetryVersion {
				return nil, fmt.Errorf("reading %s: telemetry schema %d, this benchctl reads %d", path, h.Telemetry, TelemetryVersion)
			}
			continue
		}
		var r TelemetryRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return &h, fmt.Errorf("reading %s: line %d: %v", path, line, err)
		}
		if r.Note != "" || r.Stopped {
			continue
		}
		if msg := r.check(); msg != "" { // a number no GPU gives: the row is left out, and said
			if bad++; first == "" {
				first = fmt.Sprintf("line %d: %s", line, msg)
			}
			continue
		}
		row(r)
	}
	if err := sc.Err(); err != nil {
		return &h, fmt.Errorf("reading %s: line %d: %w", path, line+1, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("reading %s: empty (no telemetry header)", path)
	}
	if bad > 0 {
		return &h, fmt.Errorf("reading %s: %d rows out of range were left out (the first at %s)", path, bad, first)
	}
	return &h, nil
}
