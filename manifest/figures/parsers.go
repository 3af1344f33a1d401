package figures

import (
	"strings"
)

// ncclParser reads nccl-tests' and rccl-tests' output (the same format): the header line
// that names the columns ("#  size  count  type  redop  root  time  algbw  busbw  #wrong
// time  algbw  busbw  #wrong", older versions without root), each size's line, and "# Avg
// bus bandwidth : X". A size's line gives time (us, lower is better), algbw and busbw (GB/s,
// higher), out of place (the first three) and in place (the second), keyed by size_bytes,
// type and redop.
type ncclParser struct {
	cols []string // the header's column names, "#wrong" as "wrong"
}

func (p *ncclParser) line(l string) []Row {
	f := strings.Fields(l)
	if len(f) == 0 {
		return nil
	}
	if f[0] == "#" || strings.HasPrefix(f[0], "#") {
		words := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(l), "#"), "#", ""))
		if len(words) >= 2 && words[0] == "size" && words[1] == "count" {
			p.cols = words
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#")), "Avg bus bandwidth"); ok {
			v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
			if n, ok := number(v); ok {
				return []Row{{Metric: "avg_busbw", Value: n, Text: v, Unit: "GB/s", Better: BetterHigh}}
			}
		}
		return nil
	}
	if p.cols == nil || len(f) != len(p.cols) {
		return nil
	}
	if _, ok := number(f[0]); !ok {
		return nil
	}
	key := []Pair{{"size_bytes", f[0]}}
	for i, c := range p.cols {
		if c == "type" || c == "redop" {
			key = append(key, Pair{c, f[i]})
		}
	}
	var out []Row
	seen := map[string]int{}
	for i, c := range p.cols {
		unit, better := "", ""
		switch c {
		case "time":
			unit, better = "us", BetterLow
		case "algbw", "busbw":
			unit, better = "GB/s", BetterHigh
		default:
			continue
		}
		place := "out_of_place"
		if seen[c] > 0 {
			place = "in_place"
		}
		seen[c]++
		if v, ok := number(f[i]); ok { // "N/A" for a skipped in-place run
			out = append(out, Row{Metric: c + "_" + place, Value: v, Text: f[i], Unit: unit, Better: better, Key: key})
		}
	}
	return out
}

// osuParser reads the OSU micro-benchmarks' output: a header "# Size  <column>  <column>..."
// (columns separated by two or more spaces: "Latency (us)", "Bandwidth (MB/s)", "Avg
// Latency(us)", "MB/s", "Messages/s"), then a line per message size. Each column is a
// metric (its name lower-cased, words joined by _, the unit in parentheses taken off),
// keyed by message_size; latencies and times are better lower, the rest higher.
// "Iterations" is not a figure.
type osuParser struct {
	metrics []osuColumn
}

type osuColumn struct{ metric, unit, better string }

func (p *osuParser) line(l string) []Row {
	t := strings.TrimSpace(l)
	if rest, ok := strings.CutPrefix(t, "#"); ok {
		rest = strings.TrimSpace(rest)
		if name, cols, ok := splitWide(rest); ok && name == "Size" {
			p.metrics = p.metrics[:0]
			for _, c := range cols {
				p.metrics = append(p.metrics, osuMetric(c))
			}
		}
		return nil
	}
	f := strings.Fields(t)
	if p.metrics == nil || len(f) != len(p.metrics)+1 {
		return nil
	}
	if _, ok := number(f[0]); !ok {
		return nil
	}
	var out []Row
	for i, m := range p.metrics {
		if m.metric == "" {
			continue
		}
		if v, ok := number(f[i+1]); ok {
			out = append(out, Row{Metric: m.metric, Value: v, Text: f[i+1], Unit: m.unit, Better: m.better, Key: []Pair{{"message_size", f[0]}}})
		}
	}
	return out
}

// splitWide splits an OSU header at runs of two or more spaces: the first column's name
// and the others.
func splitWide(s string) (string, []string, bool) {
	var parts []string
	for _, p := range strings.Split(s, "  ") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) < 2 {
		return "", nil, false
	}
	return parts[0], parts[1:], true
}

func osuMetric(col string) osuColumn {
	name, unit := col, ""
	if i := strings.IndexByte(col, '('); i >= 0 && strings.HasSuffix(col, ")") {
		name, unit = strings.TrimSpace(col[:i]), col[i+1:len(col)-1]
	}
	if strings.EqualFold(name, "Iterations") {
		return osuColumn{}
	}
	if unit == "" && strings.Contains(name, "/") { // "MB/s", "Messages/s": a rate named by its unit
		unit = name
	}
	metric := strings.ToLower(strings.Join(strings.Fields(strings.NewReplacer("/", "_per_", "-", "_").Replace(name)), "_"))
	better := BetterHigh
	if l := strings.ToLower(name); strings.Contains(l, "latency") || strings.Contains(l, "time") {
		better = BetterLow
	}
	return osuColumn{metric, unit, better}
}

// hpccParser reads HPC Challenge's hpccoutf.txt: every NAME=NUMBER line of its summary
// section ("Begin of Summary section." to "End of Summary section.") is a figure (HPL_Tflops,
// StarSTREAM_Triad, PTRANS_GBs, MPIRandomAccess_GUPs, ...): times, latencies and errors
// better lower, the rest higher; the unit from the name's suffix where it has one.
type hpccParser struct {
	in bool
}

func (p *hpccParser) line(l string) []Row {
	t := strings.TrimSpace(l)
	switch t {
	case "Begin of Summary section.":
		p.in = true
		return nil
	case "End of Summary section.":
		p.in = false
		return nil
	}
	if !p.in {
		return nil
	}
	name, v, ok := strings.Cut(t, "=")
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return nil
	}
	n, ok := number(strings.TrimSpace(v))
	if !ok {
		return nil
	}
	unit, better := hpccUnit(name)
	return []Row{{Metric: name, Value: n, Text: strings.TrimSpace(v), Unit: unit, Better: better}}
}

func hpccUnit(name string) (unit, better string) {
	l := strings.ToLower(name)
	switch {
	case strings.HasSuffix(l, "_tflops"):
		return "Tflop/s", BetterHigh
	case strings.HasSuffix(l, "_gflops"):
		return "Gflop/s", BetterHigh
	case strings.HasSuffix(l, "_gbs"), strings.HasSuffix(l, "_copy"), strings.HasSuffix(l, "_scale"), strings.HasSuffix(l, "_add"), strings.HasSuffix(l, "_triad"):
		return "GB/s", BetterHigh
	case strings.HasSuffix(l, "_gups"):
		return "GUP/s", BetterHigh
	case strings.HasSuffix(l, "_usec"):
		return "us", BetterLow
	case strings.HasSuffix(l, "_time"):
		return "s", BetterLow
	case strings.Contains(l, "latency"), strings.Contains(l, "error"), strings.Contains(l, "resid"):
		return "", BetterLow
	}
	return "", ""
}

// hplParser reads HPL's output (HPL.out): after a header line "T/V  N  NB  P  Q  Time
// Gflops", each result line ("WR11C2R4  10000  192  2  2  12.34  5.405e+01") gives gflops
// (Gflop/s, higher is better) and time (s, lower), keyed by the variant and its N, NB, P and
// Q as the problem.
type hplParser struct {
	cols []string
}

func (p *hplParser) line(l string) []Row {
	f := strings.Fields(l)
	if len(f) > 0 && f[0] == "T/V" {
		p.cols = f
		return nil
	}
	if p.cols == nil || len(f) != len(p.cols) || len(f[0]) < 2 || f[0][0] != 'W' {
		return nil
	}
	var problem []string
	var out []Row
	for i, c := range p.cols {
		switch c {
		case "T/V":
			problem = append(problem, f[i])
		case "N", "NB", "P", "Q":
			problem = append(problem, c+"="+f[i])
		}
	}
	key := []Pair{{"problem", strings.Join(problem, " ")}}
	for i, c := range p.cols {
		var unit, better, metric string
		switch c {
		case "Gflops":
			metric, unit, better = "gflops", "Gflop/s", BetterHigh
		case "Time":
			metric, unit, better = "time", "s", BetterLow
		default:
			continue
		}
		if v, ok := number(f[i]); ok {
			out = append(out, Row{Metric: metric, Value: v, Text: f[i], Unit: unit, Better: better, Key: key})
		}
	}
	return out
}
