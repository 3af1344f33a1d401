package jobdir

import (
	"fmt"
	"strconv"
	"strings"
)

// RankRanges writes sorted ranks as "0-2,5,7-9": at most max ranges, then "and N more"
// (collect and doctor name groups of nodes so, whatever their number).
func RankRanges(ranks []int32, max int) string {
	var b strings.Builder
	written, i := 0, 0
	for i < len(ranks) {
		j := i
		for j+1 < len(ranks) && ranks[j+1] <= ranks[j]+1 {
			j++
		}
		if written == max {
			fmt.Fprintf(&b, " and %d more", len(ranks)-i)
			break
		}
		if written > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(ranks[i])))
		if ranks[j] != ranks[i] {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(int(ranks[j])))
		}
		written++
		i = j + 1
	}
	return b.String()
}
