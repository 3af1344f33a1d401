package jobdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/atomicfile"
	"github.com/benchctl/benchctl/internal/safefile"
)

// Folder is a job attempt's folder held open for writing. Every write goes through the
// folder's descriptor (openat, mkdirat, renameat), never through its path again: a
// folder on the way that is swapped for a link after it was opened cannot redirect a
// write, and the folder was checked once when it was opened: a real folder (not a link)
// owned by the user benchctl runs as (root included: root writes only into root's job
// folders, so a link or folder that a user planted cannot make it write elsewhere).
type Folder struct {
	Dir
	f *os.File
}

// NodeFolder is a node's folder held open for writing, with the checks of Folder.
type NodeFolder struct {
	NodeDir
	f *os.File
}

// Folder modes: the job, nodes and node folders are readable by the team (collect runs
// as anyone), writable by the owner only.
const folderMode = 0o755

// CreateJob creates the folder of a job attempt (and jobs/) unless it exists, and opens
// it for writing. The nodes of a job create it together, so an existing folder is fine
// when it is this user's real folder; another user's folder, or a link, is refused
// (*safefile.OwnerError, *safefile.NotFolderError).
func (l Layout) CreateJob(id string, attempt int) (*Folder, error) {
	return l.openJob(id, attempt, true)
}

// OpenJob opens an existing job attempt's folder for writing, with the checks of
// CreateJob; a missing folder is an error satisfying errors.Is(err, fs.ErrNotExist).
func (l Layout) OpenJob(id string, attempt int) (*Folder, error) {
	return l.openJob(id, attempt, false)
}

func (l Layout) openJob(id string, attempt int, create bool) (*Folder, error) {
	d := l.Job(id, attempt)
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("%q is not a job id", id)
	}
	shared, err := l.openShared(create)
	if err != nil {
		return nil, err
	}
	defer shared.Close()
	var jobs, f *os.File
	if create {
		jobs, _, err = safefile.MkdirAt(shared, JobsFolder, folderMode)
	} else {
		jobs, err = safefile.OpenDirAt(shared, JobsFolder)
	}
	if err != nil {
		return nil, err
	}
	defer jobs.Close()
	if create {
		f, _, err = safefile.MkdirAt(jobs, Name(id, attempt), folderMode)
	} else {
		f, err = safefile.OpenDirAt(jobs, Name(id, attempt))
	}
	if err != nil {
		return nil, err
	}
	if err := safefile.CheckOwner(f, os.Geteuid()); err != nil {
		f.Close()
		return nil, err
	}
	return &Folder{Dir: d, f: f}, nil
}

// openShared opens the shared directory, created (with its parents) when create is set:
// the user named it, so links on its path are followed.
func (l Layout) openShared(create bool) (*os.File, error) {
	base := l.Shared
	if base == "" {
		base = "."
	}
	if create {
		if err := os.MkdirAll(base, folderMode); err != nil {
			return nil, err
		}
	}
	return os.Open(base)
}

// Close closes the folder.
func (f *Folder) Close() error { return f.f.Close() }

// CreateFile creates the file name of the job folder holding data, with exactly perm. It
// must not exist yet, not even as a link: then the error satisfies
// errors.Is(err, fs.ErrExist). A reader may see it empty or partly written.
func (f *Folder) CreateFile(name string, data []byte, perm os.FileMode) error {
	w, err := safefile.CreateNewAt(f.f, name, perm)
	if err != nil {
		return err
	}
	_, werr := w.Write(data)
	if err := w.Sync(); werr == nil {
		werr = err
	}
	if err := w.Close(); werr == nil {
		werr = err
	}
	return werr
}

// OpenFile opens the regular file name of the job folder for reading: never a link, and a
// FIFO or device is refused without blocking (*safefile.NotRegularError).
func (f *Folder) OpenFile(name string) (*os.File, error) { return safefile.OpenAt(f.f, name) }

// WriteFile writes a file of the job folder (job.json, barrier.addr) atomically.
func (f *Folder) WriteFile(name string, data []byte) error {
	return atomicfile.WriteFileAt(f.f, name, data, 0o644)
}

// WriteJob writes job.json atomically. Version is set to JobVersion.
func (f *Folder) WriteJob(j *Job) error {
	j.Version = JobVersion
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", f.JobFile(), err)
	}
	return f.WriteFile(JobFile, append(data, '\n'))
}

// ReplaceJob writes job.json atomically, as WriteJob, without waiting for the disk (a node
// rewrites it as it learns the job's images and engine): SyncJob, later and beside the
// node's critical path, makes what was written last durable.
func (f *Folder) ReplaceJob(j *Job) error {
	j.Version = JobVersion
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", f.JobFile(), err)
	}
	return atomicfile.ReplaceFileAt(f.f, JobFile, append(data, '\n'), 0o644)
}

// SyncJob makes job.json as it is now durable: the file (never a link or a FIFO: OpenFile's
// checks), then the folder's entry of it.
func (f *Folder) SyncJob() error {
	jf, err := f.OpenFile(JobFile)
	if err != nil {
		return err
	}
	serr := jf.Sync()
	if err := jf.Close(); serr == nil {
		serr = err
	}
	if serr != nil {
		return fmt.Errorf("syncing %s: %w", f.JobFile(), serr)
	}
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("syncing the job folder %s: %w", f.Path, err)
	}
	return nil
}

// CreateNode creates the node folder of rank on host (and nodes/) unless it exists, and
// opens it for writing, with the checks of CreateJob.
func (f *Folder) CreateNode(rank int, host string) (*NodeFolder, error) {
	nd := f.Node(rank, host)
	if _, _, ok := ParseNodeName(nd.Name); !ok || strings.ContainsAny(host, `/\`) {
		return nil, fmt.Errorf("%q is not a node folder name (<rank>-<host>)", nd.Name)
	}
	nodes, err := f.nodes(true)
	if err != nil {
		return nil, err
	}
	defer nodes.Close()
	d, _, err := safefile.MkdirAt(nodes, nd.Name, folderMode)
	if err != nil {
		return nil, err
	}
	if err := safefile.CheckOwner(d, os.Geteuid()); err != nil {
		d.Close()
		return nil, err
	}
	return &NodeFolder{NodeDir: nd, f: d}, nil
}

// OpenNode opens the existing node folder of that name for writing, with the checks of
// CreateJob.
func (f *Folder) OpenNode(name string) (*NodeFolder, error) {
	nodes, err := f.nodes(false)
	if err != nil {
		return nil, err
	}
	defer nodes.Close()
	d, err := safefile.OpenDirAt(nodes, name)
	if err != nil {
		return nil, err
	}
	if err := safefile.CheckOwner(d, os.Geteuid()); err != nil {
		d.Close()
		return nil, err
	}
	return &NodeFolder{NodeDir: f.NodeNamed(name), f: d}, nil
}

// NodeNames lists the entries of nodes/ (read through the folder's descriptor); a job
// without nodes/ has none.
func (f *Folder) NodeNames() ([]string, error) {
	nodes, err := f.nodes(false)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer nodes.Close()
	return nodes.Readdirnames(-1)
}

func (f *Folder) nodes(create bool) (*os.File, error) {
	if create {
		d, _, err := safefile.MkdirAt(f.f, NodesFolder, folderMode)
		return d, err
	}
	return safefile.OpenDirAt(f.f, NodesFolder)
}

// Close closes the node folder.
func (n *NodeFolder) Close() error { return n.f.Close() }

// WriteStatus writes status.json atomically and durably (synced to the disk), through the
// folder's descriptor: a node's last word.
func (n *NodeFolder) WriteStatus(s *Status) error {
	return n.writeStatus(s, atomicfile.WriteFileAt)
}

// WriteStatusProgress writes status.json atomically, not synced: a view of a node's
// progress, rewritten at each phase and trial, whose last write (WriteStatus) is the one
// that must last. What must outlive a crash of the machine as it happens, a trial's
// record, is in the trial log, which is synced.
func (n *NodeFolder) WriteStatusProgress(s *Status) error {
	return n.writeStatus(s, atomicfile.ReplaceFileAt)
}

func (n *NodeFolder) writeStatus(s *Status, write func(*os.File, string, []byte, os.FileMode) error) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", n.Status(), err)
	}
	return write(n.f, StatusFile, append(data, '\n'), 0o644)
}

// ReadStatus reads status.json through the folder's descriptor (not a link, not a FIFO,
// at most MaxStatusSize), with the time it was last written.
func (n *NodeFolder) ReadStatus() (*Status, time.Time, error) {
	f, err := safefile.OpenAt(n.f, StatusFile)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	var mod time.Time
	if fi, err := f.Stat(); err == nil {
		mod = fi.ModTime().UTC()
	}
	var r safefile.Reader
	data, err := r.ReadOpen(f, MaxStatusSize)
	if err != nil {
		return nil, mod, err
	}
	var s Status
	if err := decodeFile(n.Status(), data, &s); err != nil {
		return nil, mod, err
	}
	return &s, mod, nil
}

// CreateLog creates (or truncates) a benchmark's log file: a regular file of the node
// folder, never a link or FIFO found there.
func (n *NodeFolder) CreateLog(bench string) (*os.File, error) {
	return safefile.CreateAt(n.f, LogName(bench), 0o644)
}

// MkdirAll creates the folders of rel (ResultsRel, DiagRel: relative to the node folder,
// one component at a time, none of them a link) with perm unless they exist, and returns
// the last one open. Folders made on the way get perm too.
func (n *NodeFolder) MkdirAll(rel string, perm os.FileMode) (*os.File, error) {
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%q is not a folder inside %s", rel, n.Path)
	}
	cur := n.f
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		next, _, err := safefile.MkdirAt(cur, part, perm)
		if cur != n.f {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}
