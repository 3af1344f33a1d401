package report

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/benchctl/benchctl/results"
)

// artefactsOpen is how many artefacts a benchmark's report lists open; a longer list is
// collapsed (a <details> element), and the report never lists more than summary.json.
const artefactsOpen = 20

// artView is one node's artefacts of a benchmark, as the report shows them.
type artView struct {
	Label string
	Files []artFile
	Note  string // what was left out, and why
}

type artFile struct {
	Href    string // relative to the job folder, each name percent-encoded
	Name    string // relative to the node's output folder
	Type    string // "" for a regular file
	Size    string
	Results bool
}

// artefactsView is a benchmark's artefacts for the report, and how many files they list.
func artefactsView(b *results.BenchmarkSummary) ([]artView, int) {
	var out []artView
	n := 0
	for _, a := range b.Artefacts {
		v := artView{Label: a.Label()}
		for _, f := range a.Files {
			name := f.Path
			if i := strings.Index(name, "/results/"); i >= 0 {
				if j := strings.IndexByte(name[i+len("/results/"):], '/'); j >= 0 {
					name = name[i+len("/results/")+j+1:]
				}
			}
			af := artFile{Href: linkPath(f.Path), Name: name, Results: f.Results}
			if f.Type != results.ArtefactFile {
				af.Type, af.Href = f.Type, "" // a link is not followed, a FIFO not opened: no link to them
			} else {
				af.Size = byteSize(f.Size)
			}
			v.Files = append(v.Files, af)
			n++
		}
		var notes []string
		if a.Omitted > 0 {
			more := ""
			if a.Incomplete {
				more = " or more"
			}
			notes = append(notes, fmt.Sprintf("%d%s more not listed (see the node's folder)", a.Omitted, more))
		} else if a.Incomplete {
			notes = append(notes, "more not listed: collect stopped looking")
		}
		if a.Deep > 0 {
			notes = append(notes, fmt.Sprintf("%s deeper than %d levels not entered", results.Plural(a.Deep, "folder", "folders"), results.MaxArtefactDepth))
		}
		if a.Problem != "" {
			notes = append(notes, a.Problem)
		}
		notes = append(notes, byteSize(a.Bytes)+" in all")
		v.Note = strings.Join(notes, "; ")
		out = append(out, v)
	}
	return out, n
}

// linkPath percent-encodes each name of a '/'-separated path, for a relative link.
func linkPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// byteSize is n bytes, readable: 512 B, 1.5 KiB, 3.0 MiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, u := float64(n)/unit, "KiB"
	for _, next := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, u = f/unit, next
	}
	return fmt.Sprintf("%.1f %s", f, u)
}
