package jobdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/internal/safefile"
)

// ListedNode is a folder of nodes/ that is one of the job's nodes.
type ListedNode struct {
	Name string // "<rank>-<host>"
	Rank int
	Host string
}

// StrayFolder is an entry of nodes/ that is not one of the job's nodes, and why.
type StrayFolder struct {
	Name   string
	Reason string
}

func (s StrayFolder) String() string { return NodeDisplay(s.Name) + ": " + s.Reason }

// NodeList is an attempt's nodes/ folder as ListNodes judged it.
type NodeList struct {
	Nodes []ListedNode  // the job's node folders, by rank
	Stray []StrayFolder // folders (and links) that are not, by name
}

// ListNodes lists the attempt's node folders and decides which are the job's: it is the
// one place that does, for collect, jobs and submit --wait alike. j is the attempt's
// job.json, nil when it cannot be read. A co-writer of the shared directory can add
// entries to nodes/, so only these count:
//
//   - a real folder (a symbolic link is stray, wherever it leads: benchctl never links a
//     node folder, and a link may lead outside the job folder);
//   - named "<rank>-<host>";
//   - whose rank is below the job's world (job.json's world, else the length of its host
//     list; without job.json every rank is below it);
//   - that is the only folder of its rank. Of several folders of one rank, the one whose
//     host is job.json's host of that rank counts and the others are stray; when job.json
//     does not name one of them, none counts (the rank is then a node that never
//     reported): neither is more trustworthy than the other.
//
// Files in nodes/ (a temporary file, a FIFO) are no node's and are left out silently. A
// nodes/ that is missing is an error that wraps fs.ErrNotExist; one that is not a folder
// (a link, a FIFO) is an error, and it is never opened in a way that could block.
func (d Dir) ListNodes(j *Job) (NodeList, error) {
	var out NodeList
	f, err := openDirNoFollow(d.Nodes())
	if err != nil {
		return out, err
	}
	defer f.Close()
	world := 0
	if j != nil {
		world = j.World
		if world <= 0 {
			world = len(j.Nodes)
		}
	}
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			name := e.Name()
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				out.Stray = append(out.Stray, StrayFolder{name, "a symbolic link; a node folder is never a link (it may lead outside the job folder): not counted"})
				continue
			case !e.IsDir():
				continue
			}
			rank, host, ok := ParseNodeName(name)
			switch {
			case !ok:
				out.Stray = append(out.Stray, StrayFolder{name, "not a node folder (node folders are named <rank>-<host>): not counted"})
			case world > 0 && rank >= world:
				out.Stray = append(out.Stray, StrayFolder{name, fmt.Sprintf("rank %d is beyond the job's %d nodes (job.json): not counted", rank, world)})
			default:
				out.Nodes = append(out.Nodes, ListedNode{Name: name, Rank: rank, Host: host})
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("reading %s: %w", d.Nodes(), err)
		}
	}
	slices.SortFunc(out.Nodes, func(a, b ListedNode) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.Name, b.Name)
	})
	out.Nodes, out.Stray = dropDuplicates(out.Nodes, out.Stray, j)
	slices.SortFunc(out.Stray, func(a, b StrayFolder) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// dropDuplicates keeps one folder per rank (nodes sorted by rank): see ListNodes.
func dropDuplicates(nodes []ListedNode, stray []StrayFolder, j *Job) ([]ListedNode, []StrayFolder) {
	kept := nodes[:0]
	for i := 0; i < len(nodes); {
		k := i + 1
		for k < len(nodes) && nodes[k].Rank == nodes[i].Rank {
			k++
		}
		group := nodes[i:k]
		i = k
		if len(group) == 1 {
			kept = append(kept, group[0])
			continue
		}
		rank := group[0].Rank
		want := ""
		if j != nil && rank < len(j.Nodes) {
			want = j.Nodes[rank]
		}
		owner := slices.IndexFunc(group, func(n ListedNode) bool { return want != "" && n.Host == want })
		names := make([]string, len(group))
		for gi, n := range group {
			names[gi] = n.Name
		}
		for gi, n := range group {
			switch {
			case gi == owner:
			case owner >= 0:
				stray = append(stray, StrayFolder{n.Name, fmt.Sprintf("a second folder for rank %d; job.json says rank %d ran on %s, so nodes/%s counts and this one does not",
					rank, rank, want, group[owner].Name)})
			default:
				stray = append(stray, StrayFolder{n.Name, fmt.Sprintf("more than one folder for rank %d (%s), and job.json does not say which host ran it: none counts",
					rank, strings.Join(names, ", "))})
			}
		}
		if owner >= 0 {
			kept = append(kept, group[owner])
		}
	}
	return kept, stray
}

// openDirNoFollow opens a folder of the job folder for listing: a real folder, not a link,
// and never a FIFO that would block the open.
func openDirNoFollow(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is %s, not a folder; %s", path, safefile.Describe(st.Mode()), NodesFolder+"/ must be the folder benchctl made")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO swapped in since the Lstat does not block
	if err != nil {
		return nil, err
	}
	if fst, err := f.Stat(); err != nil || !os.SameFile(st, fst) {
		f.Close()
		return nil, fmt.Errorf("%s changed while it was opened; list it again", path)
	}
	return f, nil
}
