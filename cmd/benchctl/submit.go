package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	goio "io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

type submitOptions struct {
	src         manifestSource
	tools       toolFlags
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
	output      string
	engine      string
	// overrides are the Slurm flags given, which override the manifest's slurm: block
	// (set in RunE: a flag not given leaves the manifest's value).
	overrides slurm.Overrides
}

// submitted is what submit -o json prints: the job and its paths, and with --wait how it
// ended, with --collect what collect -o json prints (summary.json).
type submitted struct {
	Job      string          `json:"job"`
	Nodes    int             `json:"nodes"`
	Script   string          `json:"script"`
	JobDir   string          `json:"jobDir"`
	State    string          `json:"state,omitempty"`
	Outcomes []nodeOutcome   `json:"outcomes,omitempty"`
	Collect  json.RawMessage `json:"collect,omitempty"`
}

// nodeOutcome is one node of a followed job.
type nodeOutcome struct {
	Node     string `json:"node"`
	Outcome  string `json:"outcome"`
	Phase    string `json:"phase"`
	ExitCode int    `json:"exitCode"`
}

// dryRunSubmit is what submit --dry-run -o json prints: sbatch's arguments and the script.
type dryRunSubmit struct {
	Sbatch []string `json:"sbatch"`
	Script string   `json:"script"`
}

func newSubmitCmd(io iostreams.Streams) *cobra.Command {
	opts := &submitOptions{}
	cmd := &cobra.Command{
		Use:   "submit (--manifest FILE | --tags TAGS [--context JSON]) [--nodes N] [--wait]",
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
written or submitted.

The job asks Slurm for the GPUs the manifest needs (sbatch --gpus-per-node): gpu.count,
or with --tags the most any selected model's n_gpus asks for; gpu.count all, a model on all
of the node's GPUs and gpu.vendor none ask nothing. The manifest's slurm.gpusPerNode or
--gpus-per-node overrides it, and 0 asks nothing: sites that ask for GPUs with --gres pass
--gpus-per-node 0 --sbatch-arg=--gres=gpu:8. Any other sbatch option goes through
--sbatch-arg.

In a MAD checkout, as run does, --tags without --manifest runs the models of ./models.json
with those tags: the job runs 'benchctl run --tags' in this folder (which every node must
see at the same path), with --context or --context-file as given. A --context that names a
credential (docker_env_vars) is refused: the script would hold it; give --context-file.

-o json prints one JSON object instead of the job id: the job, its node count, the script
and the job folder; with --wait also the final state and each node's outcome, with
--collect also collect's summary (summary.json). With --dry-run it holds sbatch's arguments
and the script.`,
		Example: `  benchctl submit --manifest models/allreduce/benchmark.yaml --nodes 4 --partition gpu --wait --collect
  benchctl submit -m m.yaml --record build.json --time 02:00:00 --sbatch-arg=--constraint=mi300x
  benchctl submit -m m.yaml --nodes 2 --dry-run
  benchctl submit -m m.yaml --nodes 2 -o json
  benchctl submit --tags vllm --context-file ctx.json --nodes 2 --partition gpu
  benchctl submit -m m.yaml --gpus-per-node 0 --sbatch-arg=--gres=gpu:8`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.src.check(cmd.Name()); err != nil {
				return err
			}
			if opts.collect && !opts.wait {
				return usagef("add --wait: collect runs when the job has ended", "--collect needs --wait")
			}
			fl := cmd.Flags()
			opts.overrides = slurm.Overrides{
				Nodes: ifGiven(fl, "nodes", &opts.nodes), Partition: ifGiven(fl, "partition", &opts.partition),
				Account: ifGiven(fl, "account", &opts.account), QOS: ifGiven(fl, "qos", &opts.qos),
				Time: ifGiven(fl, "time", &opts.time), GPUsPerNode: ifGiven(fl, "gpus-per-node", &opts.gpusPerNode),
				Exclusive: ifGiven(fl, "exclusive", &opts.exclusive), SbatchArgs: opts.sbatchArgs,
			}
			opts.tools.set = fl.Lookup("tools").Changed
			return submitRun(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	opts.src.addFlags(cmd, f)
	opts.tools.addFlags(cmd)
	f.StringVar(&opts.sharedDir, "shared-dir", "", "shared directory, the same on every node (default $BENCHCTL_SHARED_DIR)")
	f.IntVarP(&opts.nodes, "nodes", "N", 0, "number of nodes (default: the manifest's slurm.nodes, else 1)")
	f.StringVarP(&opts.partition, "partition", "p", "", "Slurm partition")
	f.StringVarP(&opts.account, "account", "A", "", "Slurm account")
	f.StringVarP(&opts.qos, "qos", "q", "", "Slurm QOS")
	f.StringVarP(&opts.time, "time", "t", "", "time limit (MM, HH:MM:SS, D-HH:MM:SS)")
	f.IntVar(&opts.gpusPerNode, "gpus-per-node", 0, "GPUs to ask per node, sbatch --gpus-per-node; 0 asks none (default: the manifest's slurm.gpusPerNode, else gpu.count or the models' n_gpus)")
	f.BoolVar(&opts.exclusive, "exclusive", false, "ask for the nodes exclusively")
	f.BoolVar(&opts.requeue, "requeue", false, "let Slurm requeue the job (attempts get their own folders)")
	f.StringArrayVar(&opts.sbatchArgs, "sbatch-arg", nil, "extra sbatch option, one per flag (e.g. --sbatch-arg=--constraint=mi300x)")
	f.StringVar(&opts.record, "record", "", "run the image pinned by this build record")
	engineFlag(cmd, &opts.engine)
	f.StringSliceVar(&opts.benchmarks, "benchmarks", nil, "run only these benchmarks (comma-separated)")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the sbatch command and the script; submit nothing")
	f.BoolVar(&opts.wait, "wait", false, "follow the job until it ends and exit with its outcome")
	f.BoolVar(&opts.collect, "collect", false, "with --wait: collect the job at the end (perf.csv, report) and exit with collect's code")
	outputFlag(cmd, &opts.output, "table", "json")
	_ = cmd.MarkFlagFilename("record", "json")
	_ = cmd.MarkFlagDirname("shared-dir")
	_ = cmd.RegisterFlagCompletionFunc("benchmarks", completeBenchmarks)
	return cmd
}

// ifGiven is p when the flag name was given on the command line, else nil.
func ifGiven[T any](fl *pflag.FlagSet, name string, p *T) *T {
	if fl.Changed(name) {
		return p
	}
	return nil
}

func submitRun(ctx context.Context, io iostreams.Streams, opts *submitOptions) error {
	m, err := opts.src.load()
	if err != nil {
		return err
	}
	if err := opts.tools.apply(ctx, m); err != nil { // checked here, before the job waits in the queue
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
	selected, err := runner.SelectBenchmarks(m, opts.benchmarks)
	if err != nil {
		hint := "list the benchmarks with 'benchctl validate --manifest " + opts.src.manifest + "'"
		if len(opts.src.tags) > 0 {
			hint = "list the models with 'benchctl models list --catalog models.json --tags " + strings.Join(opts.src.tags, ",") + "'"
		}
		return usagef(hint, "%v", err)
	}
	// Flags override the manifest's slurm: block, which overrides the defaults.
	j := slurm.JobForBenchmarks(m, selected, opts.overrides)
	j.Benchctl, j.SharedDir, j.Benchmarks, j.Requeue = self, dir, opts.benchmarks, opts.requeue
	j.Engine = engineKind(opts.engine, m)
	if err := submitSource(opts.src, &j); err != nil {
		return err
	}
	j.Tools, j.ToolsSet = opts.tools.names, opts.tools.set
	if opts.tools.file != "" {
		if j.ToolsFile, err = filepath.Abs(opts.tools.file); err != nil {
			return err
		}
	}
	if opts.record != "" {
		if j.Record, err = filepath.Abs(opts.record); err != nil {
			return err
		}
		if _, err := os.Stat(j.Record); err != nil {
			return usagef("pass the file written by benchctl build --record", "--record: %v", err)
		}
	}
	if err := j.Validate(); err != nil {
		return usagef("see 'benchctl submit --help'", "%v", err)
	}
	if opts.dryRun {
		j.OutputDir = jobdir.Layout{Shared: dir}.Submit()
		j.SecretFile = jobdir.Layout{Shared: dir}.SubmitFiles("<token>").Secret
		script, err := j.Script()
		if err != nil {
			return err
		}
		argv := j.SbatchArgv()
		if opts.output == "json" {
			return writeJSON(io.Out(), dryRunSubmit{Sbatch: argv, Script: script})
		}
		for i := range argv {
			argv[i] = slurm.Quote(argv[i])
		}
		fmt.Fprintf(io.Out(), "# sbatch %s <script>\n%s", strings.Join(argv, " "), script)
		return nil
	}
	layout := jobdir.Layout{Shared: dir}
	pruneSubmitted(ctx, layout)
	script, err := slurm.Prepare(&j)
	if err != nil {
		return err
	}
	id, err := slurm.Submit(ctx, slurm.ExecCommander{}, j, script)
	if err != nil {
		return err
	}
	rep := submitted{Job: id, Nodes: j.Nodes, Script: script, JobDir: layout.Job(id, 0).Path}
	if opts.output != "json" {
		fmt.Fprintln(io.Out(), id)
	}
	if err := layout.RecordSubmitted(j.Token, id); err != nil {
		slog.Warn("could not record the job's submission files; benchctl submit removes them after 7 days", "err", err)
	}
	slog.Info("submitted", "job", id, "nodes", j.Nodes, "script", script, "jobDir", rep.JobDir)
	if !opts.wait {
		if opts.output == "json" {
			return writeJSON(io.Out(), rep)
		}
		return nil
	}
	end, ferr := followJob(ctx, dir, id, j.Nodes)
	if end.Dir.Path != "" {
		rep.JobDir = end.Dir.Path // the attempt that ran last
	}
	rep.State = end.State
	for _, n := range end.Nodes {
		rep.Outcomes = append(rep.Outcomes, nodeOutcome{Node: n.Node, Outcome: n.Outcome, Phase: n.Phase, ExitCode: n.ExitCode})
	}
	if opts.output != "json" {
		printOutcomes(io, end.Nodes)
	}
	removeSubmittedWhenEnded(layout, id, end.Scheduler)
	err = ferr
	if opts.collect && ctx.Err() == nil {
		if ferr != nil {
			slog.Warn(ferr.Error())
		}
		copts := &collectOptions{sharedDir: dir, attempt: -1, output: opts.output}
		if opts.output != "json" {
			return collectRun(ctx, io, id, copts)
		}
		var summary bytes.Buffer
		err = collectRun(ctx, iostreams.New(io.In(), &summary, io.ErrOut()), id, copts)
		if summary.Len() > 0 {
			rep.Collect = json.RawMessage(bytes.TrimSpace(summary.Bytes()))
		}
	}
	if opts.output == "json" {
		if jerr := writeJSON(io.Out(), rep); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

// pruneSubmitted removes old submission files (secrets above all) of jobs that have ended.
func pruneSubmitted(ctx context.Context, l jobdir.Layout) {
	n, err := slurm.PruneSubmitted(ctx, slurm.ExecCommander{}, l, time.Now())
	if err != nil {
		slog.Warn("pruning old submission files in "+l.Submit(), "err", err)
	}
	if n > 0 {
		slog.Info("removed the submission files of ended jobs", "count", n, "folder", l.Submit())
	}
}

// removeSubmittedWhenEnded removes a job's submission files (its secret) once Slurm has
// said it ended (jobdir.Layout.RemoveSubmittedWhenEnded), and says when that failed.
func removeSubmittedWhenEnded(l jobdir.Layout, id string, st jobdir.SchedulerState) {
	if _, err := l.RemoveSubmittedWhenEnded(id, st); err != nil {
		slog.Warn("could not remove the job's submission files", "job", id, "err", err)
	}
}

// followJob waits for a submitted job, logging its nodes' phases, and returns how it ended
// and the job's verdict (jobdir.Judge).
func followJob(ctx context.Context, shared, id string, world int) (jobdir.Ended, error) {
	end, err := jobdir.Follow{Layout: jobdir.Layout{Shared: shared}, JobID: id, World: world, Scheduler: slurm.Scheduler{},
		Line: func(line string, err error) {
			if err != nil {
				slog.Warn("Slurm did not answer about job " + id + " (" + slurm.Brief(err) + ")")
			}
			slog.Info(line)
		}}.Run(ctx)
	if err == nil {
		slog.Info("job finished", "job", id, "state", end.State, "jobDir", end.Dir.Path)
	}
	return end, err
}

// printOutcomes is the table of a followed job's nodes.
func printOutcomes(io iostreams.Streams, nodes []jobdir.NodeProgress) {
	if nodes == nil {
		return
	}
	_ = colouredTable(io, "OUTCOME", func(w goio.Writer) error {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tOUTCOME\tLAST PHASE")
		for _, n := range nodes {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Node, n.Outcome, n.Phase)
		}
		return tw.Flush()
	})(io.Out()) // stdout that cannot be written to: nothing to tell, as before
}

// submitSource makes the job run what src names: the manifest, or with --tags the models of
// the MAD checkout in the working folder, with madengine's context. An inline --context
// that names a credential is refused: the job script would hold its value.
func submitSource(src manifestSource, j *slurm.Job) error {
	if len(src.tags) == 0 {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("finding the MAD checkout (the working folder): %w", err)
	}
	j.Tags, j.Checkout, j.Context, j.RunGenerators = src.tags, wd, src.context, src.generators
	if src.contextFile != "" {
		if j.ContextFile, err = filepath.Abs(src.contextFile); err != nil {
			return err
		}
	}
	var keys map[string]map[string]json.RawMessage
	_ = json.Unmarshal([]byte(src.context), &keys) // loading the checkout checked it already
	for _, key := range []string{"docker_env_vars", "docker_build_arg"} {
		for name := range keys[key] {
			if manifest.CredentialLike(name) {
				return usagef("put the context in a file only you can read and give --context-file FILE",
					"--context: %s.%s looks like a credential, and the job script would hold its value", key, name)
			}
		}
	}
	return nil
}
