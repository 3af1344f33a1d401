package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
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
	if len(s) > 64<<10 {
		return nil, fmt.Errorf("hostlist of %d bytes is too long to be a Slurm node list", len(s))
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return nil, fmt.Errorf("hostlist %q has a blank or control character at byte %d; host names have none", shorten(s), i)
	}
	var out []string
	seen := map[string]bool{}
	items, err := splitTop(s)
	if err != nil {
		return nil, fmt.Errorf("hostlist %q: %w", shorten(s), err)
	}
	for _, item := range items {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q has an empty entry", shorten(s))
		}
		hosts, err := expandItem(item, MaxHosts-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", shorten(s), err)
		}
		for _, h := range hosts {
			if seen[h] {
				return nil, fmt.Errorf("hostlist %q names host %s twice", shorten(s), h)
			}
			seen[h] = true
		}
		out = append(out, hosts...)
	}
	return out, nil
}

// shorten keeps error messages about huge hostlists readable.
func shorten(s string) string {
	if len(s) <= 200 {
		return s
	}
	return s[:200] + "…"
}

// splitTop splits at commas outside brackets; brackets must pair up and not nest.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("nested '[' at byte %d", i)
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("']' without '[' at byte %d", i)
			}
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed '['")
	}
	return append(parts, s[start:]), nil
}

// expandItem expands one name with zero or more bracket groups, into at most limit names.
func expandItem(item string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, fmt.Errorf("more than %d hosts", MaxHosts)
	}
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
	values, err := expandRanges(ranges, limit)
	if err != nil {
		return nil, err
	}
	tails, err := expandItem(rest, max(1, limit/len(values)))
	if err != nil {
		return nil, err
	}
	if len(values)*len(tails) > limit {
		return nil, fmt.Errorf("%q expands to more than %d hosts", shorten(item), MaxHosts)
	}
	out := make([]string, 0, len(values)*len(tails))
	for _, v := range values {
		for _, t := range tails {
			out = append(out, prefix+v+t)
		}
	}
	return out, nil
}

// expandRanges expands "01-04,07" keeping the width of zero-padded numbers, into at most
// limit values (counted before anything is allocated).
func expandRanges(s string, limit int) ([]string, error) {
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
			if len(out) >= limit {
				return nil, fmt.Errorf("more than %d hosts", MaxHosts)
			}
			out = append(out, lo)
			continue
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("range %q goes backwards or is too large", r)
		}
		if b-a >= limit-len(out) {
			return nil, fmt.Errorf("range %q makes more than %d hosts", r, MaxHosts)
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
