package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/scheduler/kubernetes"
	"github.com/benchctl/benchctl/scheduler/slurm"
)

func newSubmitCmd(io iostreams.Streams, run runF[*commands.SubmitOptions]) *cobra.Command {
	run = run.or(commands.Submit)
	opts := &commands.SubmitOptions{}
	sched := "slurm"
	var cluster kubernetes.Cluster
	cmd := &cobra.Command{
		Use:   "submit (--manifest FILE | --tags TAGS [--context JSON]) [--nodes N] [--wait]",
		Short: "Submit the manifest's benchmarks as a Slurm job (sbatch + srun benchctl run) or a Kubernetes Job",
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
and the script.

--scheduler kubernetes makes the job an Indexed Job of --nodes pods on the cluster of the
kubeconfig (--kubeconfig, else $KUBECONFIG or ~/.kube/config, else the pod's own), one pod
a node, each running 'benchctl run --runtime process' in the benchmark's image (image.ref,
which the kubelets pull), with the manifest as a ConfigMap and the job secret as a Secret;
the manifest's kubernetes: block says the namespace, the results volume, resources and
placement. The job id it prints is k8s-<time>-<4 hex digits>. --dry-run prints the
objects as YAML (the secret's value hidden); --wait and --collect read the Job and its
pods, and the results volume as --shared-dir. See docs/kubernetes.md.`,
		Example: `  benchctl submit --manifest models/allreduce/benchmark.yaml --nodes 4 --partition gpu --wait --collect
  benchctl submit -m m.yaml --record build.json --time 02:00:00 --sbatch-arg=--constraint=mi300x
  benchctl submit -m m.yaml --nodes 2 --dry-run
  benchctl submit -m m.yaml --nodes 2 -o json
  benchctl submit --tags vllm --context-file ctx.json --nodes 2 --partition gpu
  benchctl submit -m m.yaml --gpus-per-node 0 --sbatch-arg=--gres=gpu:8
  benchctl submit -m m.yaml --scheduler kubernetes --nodes 2 --shared-dir /mnt/results --wait --collect`,
		Args: manifestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Src.Check(cmd.Name()); err != nil {
				return err
			}
			if opts.Collect && !opts.Wait {
				return usagef("add --wait: collect runs when the job has ended", "--collect needs --wait")
			}
			fl := cmd.Flags()
			opts.Tools.Set = fl.Lookup("tools").Changed
			switch sched {
			case "kubernetes":
				for _, name := range []string{"partition", "account", "qos", "time", "gpus-per-node", "exclusive", "requeue", "sbatch-arg"} {
					if fl.Changed(name) {
						return usagef("set the pods' options in the manifest's kubernetes: block (docs/kubernetes.md)", "--%s is an option of Slurm's, not of --scheduler kubernetes", name)
					}
				}
				opts.Submitter = kubernetes.Submitter{Scheduler: kubernetes.Scheduler{Cluster: &cluster},
					Overrides: kubernetes.Overrides{Nodes: ifGiven(fl, "nodes", &opts.Nodes)}}
				return run(cmd.Context(), io, opts)
			case "slurm":
			default:
				return usagef("give --scheduler slurm or --scheduler kubernetes", "--scheduler %q is not a scheduler benchctl submits to", sched)
			}
			for _, name := range []string{"kubeconfig", "namespace"} {
				if fl.Changed(name) {
					return usagef("add --scheduler kubernetes", "--%s is an option of --scheduler kubernetes", name)
				}
			}
			opts.Submitter = slurm.Submitter{Overrides: slurm.Overrides{
				Nodes: ifGiven(fl, "nodes", &opts.Nodes), Partition: ifGiven(fl, "partition", &opts.Partition),
				Account: ifGiven(fl, "account", &opts.Account), QOS: ifGiven(fl, "qos", &opts.Qos),
				Time: ifGiven(fl, "time", &opts.Time), GPUsPerNode: ifGiven(fl, "gpus-per-node", &opts.GpusPerNode),
				Exclusive: ifGiven(fl, "exclusive", &opts.Exclusive), SbatchArgs: opts.SbatchArgs,
			}}
			return run(cmd.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	addSourceFlags(&opts.Src, cmd, f)
	addToolFlags(&opts.Tools, cmd)
	f.StringVar(&opts.SharedDir, "shared-dir", "", "shared directory, the same on every node (default $BENCHCTL_SHARED_DIR)")
	f.IntVarP(&opts.Nodes, "nodes", "N", 0, "number of nodes (default: the manifest's slurm.nodes, else 1)")
	f.StringVarP(&opts.Partition, "partition", "p", "", "Slurm partition")
	f.StringVarP(&opts.Account, "account", "A", "", "Slurm account")
	f.StringVarP(&opts.Qos, "qos", "q", "", "Slurm QOS")
	f.StringVarP(&opts.Time, "time", "t", "", "time limit (MM, HH:MM:SS, D-HH:MM:SS)")
	f.IntVar(&opts.GpusPerNode, "gpus-per-node", 0, "GPUs to ask per node, sbatch --gpus-per-node; 0 asks none (default: the manifest's slurm.gpusPerNode, else gpu.count or the models' n_gpus)")
	f.BoolVar(&opts.Exclusive, "exclusive", false, "ask for the nodes exclusively")
	f.BoolVar(&opts.Requeue, "requeue", false, "let Slurm requeue the job (attempts get their own folders)")
	f.StringArrayVar(&opts.SbatchArgs, "sbatch-arg", nil, "extra sbatch option, one per flag (e.g. --sbatch-arg=--constraint=mi300x)")
	f.StringVar(&sched, "scheduler", "slurm", "what starts the job: slurm (sbatch) or kubernetes (an Indexed Job through the API)")
	clusterFlags(cmd, &cluster)
	f.StringVar(&opts.Record, "record", "", "run the image pinned by this build record")
	engineFlag(cmd, &opts.Engine)
	runtimeFlag(cmd, &opts.Runtime)
	f.StringSliceVar(&opts.Benchmarks, "benchmarks", nil, "run only these benchmarks (comma-separated)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print the sbatch command and the script; submit nothing")
	f.BoolVar(&opts.Wait, "wait", false, "follow the job until it ends and exit with its outcome")
	f.BoolVar(&opts.Collect, "collect", false, "with --wait: collect the job at the end (perf.csv, report) and exit with collect's code")
	outputFlag(cmd, &opts.Output, "table", "json")
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

// clusterFlags are the flags that say which Kubernetes cluster and namespace to ask.
func clusterFlags(cmd *cobra.Command, c *kubernetes.Cluster) {
	f := cmd.Flags()
	f.StringVar(&c.Kubeconfig, "kubeconfig", "", "Kubernetes: the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else the pod's own)")
	f.StringVar(&c.Namespace, "namespace", "", "Kubernetes: the namespace of the jobs (default: the manifest's kubernetes.namespace, else the kubeconfig context's)")
	_ = cmd.MarkFlagFilename("kubeconfig")
}
