package jobdir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/benchctl/benchctl/internal/safefile"
)

// A node's trial records: in a job with an experiment, each trial run's record, once it has
// ended, is one line appended to the node's trials.jsonl (TrialLogFile), and leaves
// status.json, which keeps the node's own state, the benchmarks run outside trials and the
// trial running now: a constant size, whatever the number of trials. A record costs its
// line to write (O(1)); status.json's Trials counts the lines. Readers take the log as a
// stream (ReadTrialLog), or merged back into the status's records (ReadNodeStatus).

// TrialLogFile is the node's trial log, in its node folder.
const TrialLogFile = "trials.jsonl"

// Bounds of the trial log: a line (a record is a few hundred bytes), and the lines read
// (the most trial runs a node can have: MaxTrials of every benchmark of a manifest).
const (
	MaxTrialRecordSize = 64 << 10
	MaxTrialRecords    = 4_000_000
)

// TrialLog is the node's trial log.
func (n NodeDir) TrialLog() string { return filepath.Join(n.Path, TrialLogFile) }

// AppendTrial appends rec as one line of the node's trial log, through the folder's
// descriptor (never a link or FIFO planted at the name), and syncs it. It returns the
// bytes written.
func (n *NodeFolder) AppendTrial(rec BenchmarkStatus) (int, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("encoding a trial record: %w", err)
	}
	if len(data) >= MaxTrialRecordSize {
		return 0, fmt.Errorf("a trial record of %d bytes is over the %d a line may have", len(data), MaxTrialRecordSize)
	}
	f, err := safefile.AppendAt(n.f, TrialLogFile, 0o644)
	if err != nil {
		return 0, err
	}
	w, err := f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return w, err
}

// ReadTrialLog calls fn for each record of the trial log at path, in file order: bounded
// in line length and count, never through a link or from a FIFO. A last line without its
// newline (a node killed while it wrote it) is not a record and not an error; a damaged
// line ends the reading with an error naming it, the records before it read. A missing
// log is fs.ErrNotExist.
func ReadTrialLog(path string, fn func(BenchmarkStatus)) (int, error) {
	f, err := safefile.OpenNoFollow(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	n := 0
	for line := 1; ; line++ {
		data, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return n, nil // the end, or a torn last line
		}
		if err != nil {
			return n, fmt.Errorf("reading %s: line %d: %w", path, line, err)
		}
		if n >= MaxTrialRecords {
			return n, fmt.Errorf("reading %s: more than %d records: the rest is not read", path, MaxTrialRecords)
		}
		var rec BenchmarkStatus
		if err := json.Unmarshal(data, &rec); err != nil || rec.Name == "" || rec.Trial < 1 {
			return n, fmt.Errorf("reading %s: line %d is not a trial record", path, line)
		}
		fn(rec)
		n++
	}
}

// readLine reads one line without its newline, at most MaxTrialRecordSize long; io.EOF
// when no whole line is left.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxTrialRecordSize {
			return nil, fmt.Errorf("longer than %d bytes", MaxTrialRecordSize)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(line, []byte("\n")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

// ReadNodeStatus reads a node's status.json and merges its trial log's records into
// Benchmarks, before the status's own (those run outside trials, and the trial running
// when the status was written): the node's records as one list, in the order they were
// made. A damaged log is an error returned with the status and the records read before
// the damage.
func ReadNodeStatus(r *safefile.Reader, node NodeDir) (*Status, error) {
	st, err := ReadStatusWith(r, node.Status())
	if err != nil {
		return nil, err
	}
	var recs []BenchmarkStatus
	if st.Trials > 0 {
		recs = make([]BenchmarkStatus, 0, min(st.Trials, MaxTrialRecords))
	}
	_, lerr := ReadTrialLog(node.TrialLog(), func(b BenchmarkStatus) { recs = append(recs, b) })
	if errors.Is(lerr, fs.ErrNotExist) {
		lerr = nil
	}
	if len(recs) > 0 {
		st.Benchmarks = append(recs, st.Benchmarks...)
	}
	return st, lerr
}
