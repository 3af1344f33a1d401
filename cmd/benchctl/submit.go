package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/slurm"
)

type submitOptions struct {
	manifest    string
	sharedDir   string
	nodes       int
	partition   string
	account     string
	qos         string
	time        string
	gpusPerNode int
	exclusive   bool
	requeue     bool
	sbatchArgs  []string
	record      string
	benchmarks  []string
	dryRun      bool
	wait        bool
	collect     bool
}

func newSubmitCmd(io streams) *cobra.Command {
	opts := &submitOptions{}
	cmd := &cobra.Command{
		Use:   "submit --manifest FILE [--nodes N] [--wait]",
		Short: "Submit the manifest's benchmarks as a Slurm job (sbatch + srun benchctl run)",
		Long: `Write an sbatch script that runs 'srun --ntasks-per-node=1 benchctl run' over N nodes and
submit it with 'sbatch --parsable'; print the job id. Flags override the manifest's slurm:
block. Every sbatch option is passed as its own argument (no shell), and every value in the
script is quoted, so no value can inject commands. A fresh per-job secret for the barrier
goes into a 0600 file that the script reads at run time: it is never in the script's text
or output. The script is requeue-safe: attempt n writes jobs/<id>.<n>.

--wait follows the job (squeue/scontrol, with backoff) and shows each node's phase from its
status.json; it exits 0 when every node succeeded, 2 when the image build failed, and 3
when a benchmark failed. --collect then collects the job (perf.csv, summary.json,
report.html), prints its table and exits with collect's code. --dry-run prints the sbatch command and the script; nothing is
written or submitted.`,
		Example: `  benchctl submit --manifest models/allreduce/benchmark.yaml --nodes 4 --partition gpu --wait --collect
  benchctl submit -m m.yaml --record build.json --time 02:00:00 --sbatch-arg=--constraint=mi300x
  benchctl submit -m m.yaml --nodes 2 --dry-run`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.manifest == "" {
				return usagef("give the manifest: benchctl submit --manifest m.yaml", "--manifest is required")
			}
			if opts.collect && !opts.wait {
				return usagef("add --wait: collect runs when the job has ended", "--collect needs --wait")
			}
			return submitRun(cmd, io, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.manifest, "manifest", "m", "", "manifest file (.yaml, .yml or .json)")
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory, the same on every node (default $BENCHCTL_SHARED_DIR)")
	f.IntVarP(&opts.nodes, "nodes", "N", 0, "number of nodes (default: the manifest's slurm.nodes, else 1)")
	f.StringVarP(&opts.partition, "partition", "p", "", "Slurm partition")
	f.StringVarP(&opts.account, "account", "A", "", "Slurm account")
	f.StringVarP(&opts.qos, "qos", "q", "", "Slurm QOS")
	f.StringVarP(&opts.time, "time", "t", "", "time limit (MM, HH:MM:SS, D-HH:MM:SS)")
	f.IntVar(&opts.gpusPerNode, "gpus-per-node", 0, "GPUs to request per node (sbatch --gpus-per-node)")
	f.BoolVar(&opts.exclusive, "exclusive", false, "ask for the nodes exclusively")
	f.BoolVar(&opts.requeue, "requeue", false, "let Slurm requeue the job (attempts get their own folders)")
	f.StringArrayVar(&opts.sbatchArgs, "sbatch-arg", nil, "extra sbatch option, one per flag (e.g. --sbatch-arg=--constraint=mi300x)")
	f.StringVar(&opts.record, "record", "", "run the image pinned by this build record")
	f.StringSliceVar(&opts.benchmarks, "benchmarks", nil, "run only these benchmarks (comma-separated)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the sbatch command and the script; submit nothing")
	f.BoolVar(&opts.wait, "wait", false, "follow the job until it ends and exit with its outcome")
	f.BoolVar(&opts.collect, "collect", false, "with --wait: collect the job at the end (perf.csv, report) and exit with collect's code")
	_ = cmd.MarkFlagFilename("manifest", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("benchmarks", completeBenchmarks)
	return cmd
}

func submitRun(cmd *cobra.Command, io streams, opts *submitOptions) error {
	m, err := loadManifest(opts.manifest)
	if err != nil {
		return err
	}
	dir, err := sharedDir(opts.sharedDir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the benchctl binary: %w", err)
	}
	self, _ = filepath.EvalSymlinks(self)
	// Flags override the manifest's slurm: block, which overrides the defaults.
	s := m.Slurm
	j := slurm.Job{Name: "benchctl-" + m.Name, Nodes: s.Nodes, Partition: s.Partition, Account: s.Account, QOS: s.QOS,
		Time: s.Time, GPUsPerNode: s.GPUsPerNode, Exclusive: s.Exclusive, SbatchArgs: s.SbatchArgs,
		Benchctl: self, Manifest: m.Path, SharedDir: dir, Benchmarks: opts.benchmarks, Requeue: opts.requeue}
	fl := cmd.Flags()
	if fl.Changed("nodes") {
		j.Nodes = opts.nodes
	}
	if fl.Changed("partition") {
		j.Partition = opts.partition
	}
	if fl.Changed("account") {
		j.Account = opts.account
	}
	if fl.Changed("qos") {
		j.QOS = opts.qos
	}
	if fl.Changed("time") {
		j.Time = opts.time
	}
	if fl.Changed("gpus-per-node") {
		g := opts.gpusPerNode
		j.GPUsPerNode = &g
	}
	if fl.Changed("exclusive") {
		j.Exclusive = opts.exclusive
	}
	if fl.Changed("sbatch-arg") {
		j.SbatchArgs = append(append([]string{}, j.SbatchArgs...), opts.sbatchArgs...)
	}
	if opts.record != "" {
		if j.Record, err = filepath.Abs(opts.record); err != nil {
			return err
		}
		if _, err := os.Stat(j.Record); err != nil {
			return usagef("pass the file written by benchctl build --record", "--record: %v", err)
		}
	}
	if _, err := runner.SelectBenchmarks(m, opts.benchmarks); err != nil {
		return usagef("list the benchmarks with 'benchctl validate --manifest "+opts.manifest+"'", "%v", err)
	}
	if err := j.Validate(); err != nil {
		return usagef("see 'benchctl submit --help'", "%v", err)
	}
	if opts.dryRun {
		j.SecretFile = filepath.Join(dir, "jobs", ".submit", "<token>.secret")
		j.OutputDir = filepath.Join(dir, "jobs", ".submit")
		script, err := j.Script()
		if err != nil {
			return err
		}
		argv := j.SbatchArgv()
		for i := range argv {
			argv[i] = slurm.Quote(argv[i])
		}
		fmt.Fprintf(io.out, "# sbatch %s <script>\n%s", strings.Join(argv, " "), script)
		return nil
	}
	script, err := slurm.Prepare(&j)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	id, err := slurm.Submit(ctx, slurm.ExecCommander{}, j, script)
	if err != nil {
		return err
	}
	fmt.Fprintln(io.out, id)
	slog.Info("submitted", "job", id, "nodes", j.Nodes, "script", script, "jobDir", filepath.Join(dir, "jobs", id))
	if !opts.wait {
		return nil
	}
	ferr := followJob(ctx, io, dir, id, j.Nodes)
	if !opts.collect || ctx.Err() != nil {
		return ferr
	}
	if ferr != nil {
		slog.Warn(ferr.Error())
	}
	return collectRun(ctx, io, id, &collectOptions{sharedDir: dir, attempt: -1, format: "table"})
}

// jobFailed is a job whose nodes did not all succeed: exit with its code.
type jobFailed struct {
	msg  string
	code int
}

func (e *jobFailed) Error() string { return e.msg }
func (e *jobFailed) ExitCode() int { return e.code }

// followJob waits for a submitted job, showing node phases, then reports its outcome.
func followJob(ctx context.Context, io streams, shared, id string, world int) error {
	last := ""
	lastTime := time.Now()
	st, err := slurm.Wait(ctx, slurm.ExecCommander{}, id, func(st slurm.JobState, err error) {
		if err != nil {
			slog.Warn("asking Slurm about the job", "job", id, "err", err)
		}
		line := fmt.Sprintf("job %s %s: %s", id, st.State, slurm.Summary(slurm.Progress(latestAttempt(shared, id)), world))
		if line != last || time.Since(lastTime) > time.Minute {
			slog.Info(line)
			last, lastTime = line, time.Now()
		}
	})
	if err != nil {
		return err
	}
	jobDir := latestAttempt(shared, id)
	nodes := slurm.Progress(jobDir)
	tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tOUTCOME\tLAST PHASE")
	code, failed := 0, 0
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Node, n.Outcome, n.Phase)
		if n.Outcome != "success" {
			failed++
			if c := nodeExitCode(jobDir, n.Node); c > code {
				code = c
			}
		}
	}
	tw.Flush()
	switch {
	case len(nodes) < world:
		return &jobFailed{fmt.Sprintf("job %s ended (%s) with %d of %d nodes reporting; see %s", id, st.State, len(nodes), world, jobDir), 3}
	case failed > 0:
		if code == 0 || code == 1 {
			code = 3
		}
		return &jobFailed{fmt.Sprintf("job %s: %d of %d nodes did not succeed; see %s", id, failed, world, jobDir), code}
	}
	slog.Info("job finished", "job", id, "state", st.State, "jobDir", jobDir)
	return nil
}

// latestAttempt is jobs/<id> or its highest requeue attempt jobs/<id>.<n>.
func latestAttempt(shared, id string) string {
	best, bestN := filepath.Join(shared, "jobs", id), 0
	matches, _ := filepath.Glob(filepath.Join(shared, "jobs", id+".*"))
	for _, m := range matches {
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(m), id+"."), "%d", &n); err == nil && n > bestN {
			best, bestN = m, n
		}
	}
	return best
}

func nodeExitCode(jobDir, node string) int {
	data, err := os.ReadFile(filepath.Join(jobDir, "nodes", node, "status.json"))
	if err != nil {
		return 3
	}
	var s struct {
		ExitCode int `json:"exitCode"`
	}
	if json.Unmarshal(data, &s) != nil {
		return 3
	}
	return s.ExitCode
}
