package results

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/jobdir"
)

// A benchmark's artefacts are what it and its tools (profilers, tracers: their traces,
// profiles and power CSVs, and the kept run_directory) wrote into its output folder, which
// each node keeps as nodes/<rank>-<host>/results/<run>/. collect lists them per node,
// bounded: a tool that wrote a million files or a 50-level tree costs at most
// maxArtefactScan entries and maxArtefactDepth open folders per node, and is said to have
// left some out. Nothing is followed or opened: a link is listed as a link, a FIFO or a
// device by its type.

// Bounds of the artefacts listed.
const (
	// MaxArtefacts is how many files are listed per node and run; the others are counted.
	MaxArtefacts = 200
	// MaxArtefactDepth is how many folders deep under the output folder collect looks;
	// deeper folders are counted, not entered.
	MaxArtefactDepth = 8
	// MaxArtefactNodes is how many nodes' artefacts are listed per run (ranks 0 to
	// MaxArtefactNodes-1); the other nodes' are in their folders, and counted.
	MaxArtefactNodes = 64
	// MaxArtefactScan bounds the folder entries examined per node and run.
	MaxArtefactScan = 20000
)

// Artefact types (Artefact.Type).
const (
	ArtefactFile   = "file"
	ArtefactLink   = "link"
	ArtefactFIFO   = "fifo"
	ArtefactSocket = "socket"
	ArtefactDevice = "device"
	ArtefactOther  = "other"
)

// Artefact is one entry of a benchmark's output folder on a node. Folders are not entries
// of their own: their files are, by path.
type Artefact struct {
	Path    string `json:"path"` // relative to the job folder, '/'-separated
	Type    string `json:"type"` // file, link, fifo, socket, device or other
	Size    int64  `json:"size"` // bytes, of a file (0 for the other types)
	Results bool   `json:"results,omitempty"`
}

// NodeArtefacts are the artefacts of one benchmark run on one node.
type NodeArtefacts struct {
	Rank  int        `json:"rank"`
	Host  string     `json:"host"`
	Files []Artefact `json:"files"` // sorted by path; at most MaxArtefacts
	Bytes int64      `json:"bytes"` // the regular files' sizes, listed or not
	// Omitted counts the entries not listed (beyond MaxArtefacts); Deep the folders not
	// entered (deeper than MaxArtefactDepth); Incomplete says collect stopped looking
	// (more than maxArtefactScan entries), so that there are more than it counted.
	Omitted    int    `json:"omitted,omitempty"`
	Deep       int    `json:"deep,omitempty"`
	Incomplete bool   `json:"incomplete,omitempty"`
	Problem    string `json:"problem,omitempty"`
}

// Label is "rank-host", the node's folder name.
func (n NodeArtefacts) Label() string { return jobdir.NodeName(n.Rank, n.Host) }

// artefactType names the type bits of a mode (0: a regular file).
func artefactType(m fs.FileMode) string {
	switch {
	case m == 0:
		return ArtefactFile
	case m&fs.ModeSymlink != 0:
		return ArtefactLink
	case m&fs.ModeNamedPipe != 0:
		return ArtefactFIFO
	case m&fs.ModeSocket != 0:
		return ArtefactSocket
	case m&fs.ModeDevice != 0:
		return ArtefactDevice
	}
	return ArtefactOther
}

// artefactScan is one walk of an output folder.
type artefactScan struct {
	out     *NodeArtefacts
	seen    int
	results string // the results CSV, relative to the job folder
}

// scanArtefacts lists the output folder of run on node (the folder nodeDir, named name),
// or returns nil when the node has none, or only the results CSV (a summary of a job of
// many trials must not grow by a record per node and trial that says nothing new). results is the run's results CSV ("" if none).
func scanArtefacts(nodeDir, name string, rank int, host, run, results string) *NodeArtefacts {
	dir, err := safefile.OpenDir(nodeDir)
	if err != nil {
		return nil
	}
	rel := []string{jobdir.ResultsFolder}
	rel = append(rel, strings.Split(filepath.ToSlash(run), "/")...)
	for _, c := range rel {
		sub, err := safefile.OpenDirAt(dir, c)
		dir.Close()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return &NodeArtefacts{Rank: rank, Host: host, Files: []Artefact{}, Problem: relErr(err, nodeDir, name)}
		}
		dir = sub
	}
	defer dir.Close()
	base := path.Join(append([]string{jobdir.NodesFolder, name}, rel...)...)
	sc := &artefactScan{out: &NodeArtefacts{Rank: rank, Host: host, Files: []Artefact{}}}
	if results != "" {
		sc.results = path.Join(base, filepath.ToSlash(results))
	}
	sc.walk(dir, base, 1, nodeDir, name)
	if o := sc.out; len(o.Files) == 1 && o.Files[0].Results && o.Omitted == 0 && o.Deep == 0 && !o.Incomplete && o.Problem == "" {
		return nil // only the results CSV, which the candidates list already
	}
	slices.SortFunc(sc.out.Files, func(a, b Artefact) int { return strings.Compare(a.Path, b.Path) })
	return sc.out
}

// walk lists dir (at depth, 1 for the output folder) into sc.out; it returns false when the
// scan's budget is spent.
func (sc *artefactScan) walk(dir *os.File, rel string, depth int, nodeDir, name string) bool {
	var names []string
	for {
		ents, err := dir.ReadDir(256)
		for _, e := range ents {
			if sc.seen++; sc.seen > MaxArtefactScan {
				sc.out.Incomplete = true
				break
			}
			names = append(names, e.Name())
		}
		if sc.out.Incomplete || err == io.EOF || len(ents) == 0 {
			break
		}
		if err != nil {
			if sc.out.Problem == "" {
				sc.out.Problem = relErr(err, nodeDir, name)
			}
			break
		}
	}
	slices.Sort(names) // the same files are listed whatever order the folder gives
	for _, n := range names {
		p := rel + "/" + n
		mode, size, err := safefile.LstatAt(dir, n)
		if err != nil {
			continue // gone since it was listed
		}
		if mode&fs.ModeDir != 0 {
			if depth >= MaxArtefactDepth {
				sc.out.Deep++
				continue
			}
			sub, err := safefile.OpenDirAt(dir, n)
			if err != nil {
				continue // replaced since: not entered
			}
			more := sc.walk(sub, p, depth+1, nodeDir, name)
			sub.Close()
			if !more {
				return false
			}
			continue
		}
		if mode == 0 {
			sc.out.Bytes += size
		} else {
			size = 0
		}
		if len(sc.out.Files) >= MaxArtefacts {
			sc.out.Omitted++
			continue
		}
		sc.out.Files = append(sc.out.Files, Artefact{Path: p, Type: artefactType(mode), Size: size, Results: mode == 0 && p == sc.results})
	}
	return !sc.out.Incomplete
}
