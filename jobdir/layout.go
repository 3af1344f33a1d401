package jobdir

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// File names in a job folder and a node folder.
const (
	JobFile       = "job.json"
	SecretFile    = ".barrier-secret"
	AddrFile      = "barrier.addr"
	NodesFolder   = "nodes"
	StatusFile    = "status.json"
	ResultsFolder = "results"
	// WorkspaceFolder holds a node's workspaces, one per MAD model run (a benchmark, or a
	// trial of one): what the model sees at /myworkspace, its run directory included.
	WorkspaceFolder = "workspace"
	// ClonesFolder holds the job's clones of MAD models' urls, made once by rank 0 and
	// copied by every node into its workspaces.
	ClonesFolder = "clones"
	DiagFolder   = "diagnostics"
	PerfFile     = "perf.csv"
	SummaryFile  = "summary.json"
	ReportFile   = "report.html"
	SubmitFolder = ".submit"
	// DiagReportFile and DiagSummaryFile are what diagnostics writes into a benchmark's
	// diagnostics folder: the whole report, and the lines a person reads first.
	DiagReportFile  = "report.json"
	DiagSummaryFile = "summary.txt"
	// SbatchOutFile and SbatchErrFile take the job script's own output (benchctl submit's
	// script redirects into the job folder).
	SbatchOutFile = "sbatch.out"
	SbatchErrFile = "sbatch.err"
	// JobsFolder is the folder of the job folders under the shared directory; a job script
	// computes a job folder's name in shell from it and AttemptDivider (see Name).
	JobsFolder     = "jobs"
	doctorFolder   = ".doctor"
	doctorMarker   = "rank-"
	logSuffix      = ".log"
	AttemptDivider = "."
)

// Layout computes the paths of the job folders under a shared directory.
type Layout struct {
	Shared string // $BENCHCTL_SHARED_DIR
}

// Jobs is the folder that holds every job: <shared>/jobs.
func (l Layout) Jobs() string { return filepath.Join(l.Shared, JobsFolder) }

// Submit is where benchctl submit keeps its scripts and secrets: jobs/.submit.
func (l Layout) Submit() string { return filepath.Join(l.Jobs(), SubmitFolder) }

// Doctor is the folder where benchctl doctor's nodes leave their markers: <shared>/.doctor,
// and <shared>/.doctor/<job> for a job's nodes (job is Name(id, attempt); "" outside a job).
func (l Layout) Doctor(job string) string {
	if job == "" {
		return filepath.Join(l.Shared, doctorFolder)
	}
	return filepath.Join(l.Shared, doctorFolder, job)
}

// DoctorMarker is the marker file the node of that rank leaves in a Doctor folder.
func DoctorMarker(doctorDir string, rank int) string {
	return filepath.Join(doctorDir, doctorMarker+strconv.Itoa(rank))
}

// DoctorRecord is the node record (NodeRecord) the node of that rank leaves in a Doctor
// folder, written before its marker, for rank 0 to compare drivers and firmware.
func DoctorRecord(doctorDir string, rank int) string {
	return filepath.Join(doctorDir, doctorMarker+strconv.Itoa(rank)+".json")
}

// Job is the folder of a job's attempt: jobs/<id> for attempt 0, jobs/<id>.<n> after the
// n-th requeue. It does not check that the folder exists (see Find).
func (l Layout) Job(id string, attempt int) Dir {
	return Dir{Path: filepath.Join(l.Jobs(), Name(id, attempt)), JobID: id, Attempt: attempt}
}

// Name is the folder name of a job attempt under jobs/.
func Name(id string, attempt int) string {
	if attempt == 0 {
		return id
	}
	return id + AttemptDivider + strconv.Itoa(attempt)
}

// SplitName splits "123.2" into ("123", 2); a name without a numeric suffix is attempt 0.
func SplitName(name string) (id string, attempt int) {
	if i := strings.LastIndexByte(name, '.'); i > 0 && allDigits(name[i+1:]) {
		if n, err := strconv.Atoi(name[i+1:]); err == nil && n > 0 {
			return name[:i], n
		}
	}
	return name, 0
}

// Dir is one attempt's folder of a job.
type Dir struct {
	Path     string
	JobID    string
	Attempt  int
	Attempts []int // every attempt found, ascending (set by Find)
}

// OtherAttempt is the folder of another attempt of the same job, beside d.
func (d Dir) OtherAttempt(attempt int) Dir {
	return Dir{Path: filepath.Join(filepath.Dir(d.Path), Name(d.JobID, attempt)), JobID: d.JobID, Attempt: attempt, Attempts: d.Attempts}
}

// Latest reports whether this is the job's newest attempt.
func (d Dir) Latest() bool {
	return len(d.Attempts) == 0 || d.Attempt == d.Attempts[len(d.Attempts)-1]
}

// JobFile is job.json.
func (d Dir) JobFile() string { return filepath.Join(d.Path, JobFile) }

// SbatchOut is where the job script's stdout goes.
func (d Dir) SbatchOut() string { return filepath.Join(d.Path, SbatchOutFile) }

// Secret is the job channel's secret file.
func (d Dir) Secret() string { return filepath.Join(d.Path, SecretFile) }

// BarrierAddr is where rank publishes its job-channel address: rank 0's barrier.addr, a
// relay's barrier.addr.<rank>.
func (d Dir) BarrierAddr(rank int) string { return filepath.Join(d.Path, BarrierAddrName(rank)) }

// BarrierAddrName is the name of BarrierAddr(rank) in the job folder.
func BarrierAddrName(rank int) string {
	if rank == 0 {
		return AddrFile
	}
	return AddrFile + "." + strconv.Itoa(rank)
}

// Clones is the folder of the job's clones of MAD models' urls.
func (d Dir) Clones() string { return filepath.Join(d.Path, ClonesFolder) }

// Nodes is the folder of the node folders.
func (d Dir) Nodes() string { return filepath.Join(d.Path, NodesFolder) }

// Node is the folder of the node of that rank on that host.
func (d Dir) Node(rank int, host string) NodeDir {
	name := NodeName(rank, host)
	return NodeDir{Path: filepath.Join(d.Nodes(), name), Name: name, Rank: rank, Host: host}
}

// NodeNamed is the node folder of that name; Rank is -1 when the name is not
// "<rank>-<host>" (ParseNodeName).
func (d Dir) NodeNamed(name string) NodeDir {
	n := NodeDir{Path: filepath.Join(d.Nodes(), name), Name: name, Rank: -1}
	if r, h, ok := ParseNodeName(name); ok {
		n.Rank, n.Host = r, h
	}
	return n
}

// Output is a file collect writes into the folder (PerfFile, SummaryFile, ReportFile).
func (d Dir) Output(name string) string { return filepath.Join(d.Path, name) }

// NodeDisplay is the path of a node folder, or of rel... beneath it, relative to the job
// folder and slash-separated, as collect's outputs and messages show it: "nodes/<name>",
// "nodes/<name>/results/<benchmark>/<file>". The parts are joined as given, not cleaned.
func NodeDisplay(name string, rel ...string) string {
	n := len(NodesFolder) + 1 + len(name)
	for _, r := range rel {
		n += 1 + len(r)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(NodesFolder)
	b.WriteByte('/')
	b.WriteString(name)
	for _, r := range rel {
		b.WriteByte('/')
		b.WriteString(filepath.ToSlash(r))
	}
	return b.String()
}

// NodeDir is one node's folder in a job attempt.
type NodeDir struct {
	Path string
	Name string // "<rank>-<host>"
	Rank int
	Host string
}

// NodeName is the folder name of a node: "<rank>-<host>".
func NodeName(rank int, host string) string { return fmt.Sprintf("%d-%s", rank, host) }

// maxRankDigits bounds the rank in a node folder's name (ranks below a billion).
const maxRankDigits = 9

// ParseNodeName splits "<rank>-<host>"; ok is false for any other name.
func ParseNodeName(name string) (rank int, host string, ok bool) {
	r, h, found := strings.Cut(name, "-")
	if !found || !allDigits(r) || h == "" || len(r) > maxRankDigits {
		return 0, "", false
	}
	n, err := strconv.Atoi(r)
	return n, h, err == nil
}

// Status is the node's status.json.
func (n NodeDir) Status() string { return filepath.Join(n.Path, StatusFile) }

// LogName is a benchmark's log file name, relative to the node folder.
func LogName(bench string) string { return bench + logSuffix }

// Log is a benchmark's log file.
func (n NodeDir) Log(bench string) string { return filepath.Join(n.Path, LogName(bench)) }

// ResultsRel is a benchmark's results folder relative to the node folder (what status.json
// and OpenBeneath take).
func ResultsRel(bench string) string { return filepath.Join(ResultsFolder, bench) }

// Results is a benchmark's results folder, mounted into its container.
func (n NodeDir) Results(bench string) string { return filepath.Join(n.Path, ResultsRel(bench)) }

// ResultsRoot is the node's results folder (one sub-folder per benchmark).
func (n NodeDir) ResultsRoot() string { return filepath.Join(n.Path, ResultsFolder) }

// WorkspaceRel is a MAD model run's workspace relative to the node folder.
func WorkspaceRel(run string) string { return filepath.Join(WorkspaceFolder, run) }

// Workspace is a MAD model run's workspace: the node's own /myworkspace for that run.
func (n NodeDir) Workspace(run string) string { return filepath.Join(n.Path, WorkspaceRel(run)) }

// DiagRel is a benchmark's diagnostics folder relative to the node folder.
func DiagRel(bench string) string { return filepath.Join(DiagFolder, bench) }

// Diagnostics is a benchmark's diagnostics folder.
func (n NodeDir) Diagnostics(bench string) string { return filepath.Join(n.Path, DiagRel(bench)) }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
