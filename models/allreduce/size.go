package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseSize reads a byte count: a whole number with an optional binary unit, K, M, G or T
// (1024-based), optionally followed by "i", "B" or "iB": 4096, 512K, 64M, 64MiB, 1G, 1GB.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(t)
	}
	shift, ok := unitShift(strings.ToUpper(strings.TrimSpace(t[i:])))
	if !ok || i == 0 {
		return 0, fmt.Errorf("%q is not a size (use e.g. 4096, 512K, 64M, 1G)", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << shift, nil
}

// unitShift is the power of two of an upper-case unit: "" or B, or K, M, G or T followed
// by nothing, I, B or IB.
func unitShift(u string) (uint, bool) {
	if u == "" || u == "B" {
		return 0, true
	}
	p := strings.IndexByte("KMGT", u[0])
	if rest := u[1:]; p < 0 || (rest != "" && rest != "I" && rest != "B" && rest != "IB") {
		return 0, false
	}
	return uint(10 * (p + 1)), true
}

// sizeFlag is a flag.Value holding a byte count parsed by parseSize.
type sizeFlag int64

func (f *sizeFlag) String() string { return formatSize(int64(*f)) }

func (f *sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f = sizeFlag(n)
	return nil
}

// formatSize writes n with the largest binary unit that divides it exactly.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
