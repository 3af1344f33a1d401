package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds an expansion, so that a typo like n[1-99999999] is an error, not an OOM.
const MaxHosts = 1 << 20

// ExpandHostlist expands a Slurm hostlist such as "gpu-[01-04,07],login1" or "n[1-3]-ib"
// into host names, keeping zero padding ("gpu-01"). Several bracket groups in one name
// ("r[1-2]n[1-2]") expand as a product, in Slurm's order.
func ExpandHostlist(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty hostlist")
	}
	var out []string
	for _, item := range splitTop(s) {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q has an empty entry", s)
		}
		hosts, err := expandItem(item)
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", s, err)
		}
		out = append(out, hosts...)
		if len(out) > MaxHosts {
			return nil, fmt.Errorf("hostlist %q expands to more than %d hosts", s, MaxHosts)
		}
	}
	return out, nil
}

// splitTop splits at commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandItem expands one name with zero or more bracket groups.
func expandItem(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("unbalanced ']' in %q", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("unclosed '[' in %q", item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	values, err := expandRanges(ranges)
	if err != nil {
		return nil, err
	}
	tails, err := expandItem(rest)
	if err != nil {
		return nil, err
	}
	if len(values)*len(tails) > MaxHosts {
		return nil, fmt.Errorf("%q expands to more than %d hosts", item, MaxHosts)
	}
	out := make([]string, 0, len(values)*len(tails))
	for _, v := range values {
		for _, t := range tails {
			out = append(out, prefix+v+t)
		}
	}
	return out, nil
}

// expandRanges expands "01-04,07" keeping the width of zero-padded numbers.
func expandRanges(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("empty brackets []")
	}
	var out []string
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isDigits(lo) || (isRange && !isDigits(hi)) {
			return nil, fmt.Errorf("%q is not a number or range (e.g. 01-04)", r)
		}
		if !isRange {
			out = append(out, lo)
			continue
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("range %q goes backwards or is too large", r)
		}
		if b-a >= MaxHosts {
			return nil, fmt.Errorf("range %q has more than %d hosts", r, MaxHosts)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for i := a; i <= b; i++ {
			out = append(out, fmt.Sprintf("%0*d", width, i))
		}
	}
	return out, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
