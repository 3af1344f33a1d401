package commands

import (
	"bytes"
	goio "io"
	"strings"

	"github.com/benchctl/benchctl/internal/iostreams"
)

// The colours of statuses in the tables people read on a terminal (streams.ColorEnabled:
// never in a pipe, with NO_COLOR or with TERM=dumb).
const (
	sgrRed   = "\x1b[31m"
	sgrGreen = "\x1b[32m"
	sgrGrey  = "\x1b[90m"
	sgrReset = "\x1b[0m"
)

// statusColours colour the words of the status columns: collect's STATUS, jobs' STATE,
// compare's VERDICT and submit --wait's OUTCOME. Other words (running, no change,
// inconclusive, cancelled) stay as they are.
var statusColours = map[string]string{
	"SUCCESS": sgrGreen, "FAILURE": sgrRed, "SKIPPED": sgrGrey, // collect
	"done": sgrGreen, "failed": sgrRed, "lost": sgrRed, // jobs (lost: submit too)
	"improved": sgrGreen, "regressed": sgrRed, // compare
	"success": sgrGreen, "failure": sgrRed, "timeout": sgrRed, // submit --wait
}

// colouredTable is write, a table printer, with the whole cells of its column named column
// coloured by colours when io's stdout may be coloured; as it is otherwise.
func colouredTable(io iostreams.Streams, column string, write func(goio.Writer) error) func(goio.Writer) error {
	if !io.ColorEnabled() {
		return write
	}
	return func(w goio.Writer) error {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return err
		}
		_, err := goio.WriteString(w, colourColumn(buf.String(), column, statusColours))
		return err
	}
}

type colours = map[string]string

// colourColumn colours the cells of the column named column in table, text aligned by a
// tabwriter (columns at least two spaces apart, cells counted in runes): its header is the
// first line that has the name as a word, its rows the lines after it up to an empty one.
// A cell whose whole value is a key of colours gets the colour around the word, after its
// padding is counted, so that the columns stay where they are; nothing else changes.
func colourColumn(table, column string, colours colours) string {
	lines := strings.SplitAfter(table, "\n")
	for h, line := range lines {
		start, end := columnOf([]rune(strings.TrimSuffix(line, "\n")), column)
		if start < 0 {
			continue
		}
		for i := h + 1; i < len(lines) && strings.TrimSuffix(lines[i], "\n") != ""; i++ {
			lines[i] = colourCell(lines[i], start, end, colours)
		}
		return strings.Join(lines, "")
	}
	return table
}

// columnOf is where the header's word name starts and where the next column starts (-1:
// the line's end), in runes; start is -1 when the header has no such word.
func columnOf(header []rune, name string) (start, end int) {
	start = -1
	for i := 0; i < len(header); i++ {
		if header[i] == ' ' || (i > 0 && (i < 2 || header[i-1] != ' ' || header[i-2] != ' ')) {
			continue // not a column's start
		}
		if start >= 0 {
			return start, i
		}
		if w := []rune(name); i+len(w) <= len(header) && string(header[i:i+len(w)]) == name &&
			(i+len(w) == len(header) || header[i+len(w)] == ' ') {
			start = i
		}
	}
	return start, -1
}

// colourCell colours the cell of line from rune start to end (-1: the line's end) when its
// value is one of colours.
func colourCell(line string, start, end int, colours colours) string {
	nl := strings.HasSuffix(line, "\n")
	r := []rune(strings.TrimSuffix(line, "\n"))
	if len(r) <= start || (start > 0 && r[start-1] != ' ') || (end >= 0 && (len(r) < end || r[end-1] != ' ')) {
		return line
	}
	cellEnd := len(r)
	if end >= 0 {
		cellEnd = end
	}
	value := strings.TrimRight(string(r[start:cellEnd]), " ")
	c, ok := colours[value]
	if !ok {
		return line
	}
	out := string(r[:start]) + c + value + sgrReset + string(r[start+len([]rune(value)):])
	if nl {
		out += "\n"
	}
	return out
}
