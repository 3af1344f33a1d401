package slurm

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"unicode"

	"github.com/benchctl/benchctl/jobdir"
)

// Job is what `benchctl submit` asks of sbatch.
type Job struct {
	Name  string
	Nodes int
	// MinNodes is the fewest nodes the job can run on: its experiment's largest variant.
	MinNodes    int
	Partition   string
	Account     string
	QOS         string
	Time        string
	GPUsPerNode *int
	Exclusive   bool
	Requeue     bool
	SbatchArgs  []string // passed to sbatch as they are, one argument each

	Benchctl   string // absolute path of the benchctl binary on the nodes
	Manifest   string // absolute path
	SharedDir  string
	Record     string   // optional build record
	Benchmarks []string // optional
	Engine     string   // optional: run's and cleanup's --engine (docker, podman)
	Runtime    string   // optional: run's and cleanup's --runtime (engine, process)
	// Tags, with Checkout, runs the models of a MAD checkout instead of Manifest:
	// 'benchctl run --tags' in the Checkout folder, with madengine's context as Context (the
	// JSON) or ContextFile (a path).
	Tags        []string
	Checkout    string
	Context     string
	ContextFile string
	// Tools (when ToolsSet: run's --tools, empty clearing the manifest's) and ToolsFile
	// (--tools-file, absolute) pass the tools to every node's run.
	Tools     []string
	ToolsSet  bool
	ToolsFile string
	// RunGenerators passes --run-get-models-json on: each node runs the checkout's
	// get_models_json.py to list its models (once per node, without the job's secret in
	// its environment), and a node whose list differs from rank 0's fails the job.
	RunGenerators bool
	SecretFile    string // 0600 file with the job secret, read by the script at run time
	OutputDir     string // where sbatch writes output before the script redirects it
	Token         string // names the submission's files in jobs/.submit (set by Prepare)
}

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.,:+-]+$`) })
	timeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|(?i:unlimited|infinite))$`)
	})
)

// MaxGPUsPerNode is the most GPUs per node a job may ask for (gpu.count's bound).
const MaxGPUsPerNode = 1024

// Validate checks the values that become sbatch options.
func (j Job) Validate() error {
	if j.Nodes < 1 {
		return fmt.Errorf("--nodes must be at least 1, got %d", j.Nodes)
	}
	if j.Nodes < j.MinNodes {
		return fmt.Errorf("--nodes %d is fewer than the experiment's largest variant uses (nodes: %d in experiment.matrix): give --nodes %d or more, or leave --nodes out", j.Nodes, j.MinNodes, j.MinNodes)
	}
	for _, f := range []struct{ flag, v string }{{"--partition", j.Partition}, {"--account", j.Account}, {"--qos", j.QOS}} {
		if f.v != "" && !nameRE().MatchString(f.v) {
			return fmt.Errorf("%s %q is not a Slurm name (letters, digits and . _ , : + -)", f.flag, f.v)
		}
	}
	if j.Time != "" && !timeRE().MatchString(j.Time) {
		return fmt.Errorf("--time %q is not a Slurm time limit (MM, HH:MM:SS, D-HH:MM:SS or UNLIMITED)", j.Time)
	}
	if j.GPUsPerNode != nil && *j.GPUsPerNode < 0 {
		return fmt.Errorf("--gpus-per-node must be 0 or more")
	}
	if j.GPUsPerNode != nil && *j.GPUsPerNode > MaxGPUsPerNode {
		return fmt.Errorf("--gpus-per-node %d is more GPUs than a node has (at most %d); it comes from the flag, else slurm.gpusPerNode, gpu.count or the largest n_gpus of the models", *j.GPUsPerNode, MaxGPUsPerNode)
	}
	for _, a := range j.SbatchArgs {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "\n\r\x00") {
			return fmt.Errorf("--sbatch-arg %q is not an sbatch option (one option per flag, starting with -)", a)
		}
	}
	if j.Name == "" || strings.ContainsAny(j.Name, "\n\r\x00") {
		return fmt.Errorf("job name %q is not usable", j.Name)
	}
	// Paths and names land in the script, some in comments: a line break there would end
	// the comment and start a command (or an #SBATCH line), so no control character passes.
	for _, f := range []struct{ what, v string }{{"the benchctl path", j.Benchctl}, {"the manifest path", j.Manifest},
		{"the shared directory", j.SharedDir}, {"the build record path", j.Record}, {"the secret file", j.SecretFile},
		{"the output folder", j.OutputDir}, {"--benchmarks", strings.Join(j.Benchmarks, ",")},
		{"--tags", strings.Join(j.Tags, ",")}, {"the MAD checkout", j.Checkout}, {"--context-file", j.ContextFile},
		{"--tools", strings.Join(j.Tools, ",")}, {"--tools-file", j.ToolsFile}, {"--engine", j.Engine}, {"--runtime", j.Runtime}} {
		if strings.IndexFunc(f.v, unicode.IsControl) >= 0 {
			return fmt.Errorf("%s %q contains a control character (a line break, tab, ...); rename it", f.what, f.v)
		}
	}
	// sbatch's --output is a filename pattern, and Slurm drops every backslash from a
	// pattern that has one (older versions keep a doubled one): a folder with a backslash
	// cannot be named there.
	out, what := j.OutputDir, "the output folder"
	if out == "" {
		out, what = j.SharedDir, "the shared directory"
	}
	if strings.Contains(out, `\`) {
		return fmt.Errorf("%s %q contains a backslash, which Slurm removes from sbatch --output file names (the job's output would land elsewhere); use a directory without one", what, out)
	}
	return nil
}

// filenamePattern makes a path literal inside an sbatch filename pattern (--output,
// --error), where Slurm replaces %j, %u, %x, ...: a "%" is written "%%". A path with a
// backslash cannot be written literally at all (Validate refuses it).
func filenamePattern(path string) string {
	return strings.ReplaceAll(path, "%", "%%")
}

// SbatchArgs is sbatch's argument list (without the script): every option one argument,
// never parsed by a shell.
func (j Job) SbatchArgv() []string {
	a := []string{"--parsable", "--job-name=" + j.Name, "--nodes=" + strconv.Itoa(j.Nodes), "--ntasks-per-node=1",
		"--output=" + filenamePattern(j.OutputDir) + "/slurm-%j.out"}
	if j.Partition != "" {
		a = append(a, "--partition="+j.Partition)
	}
	if j.Account != "" {
		a = append(a, "--account="+j.Account)
	}
	if j.QOS != "" {
		a = append(a, "--qos="+j.QOS)
	}
	if j.Time != "" {
		a = append(a, "--time="+j.Time)
	}
	if j.GPUsPerNode != nil && *j.GPUsPerNode > 0 {
		a = append(a, "--gpus-per-node="+strconv.Itoa(*j.GPUsPerNode))
	}
	if j.Exclusive {
		a = append(a, "--exclusive")
	}
	if j.Requeue {
		a = append(a, "--requeue")
	}
	return append(a, j.SbatchArgs...)
}

// Quote quotes a word for POSIX shells: the result reads back as exactly that word.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// scriptTmpl is parsed when first used, not at every start of benchctl.
var scriptTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("job").Funcs(template.FuncMap{"q": Quote, "join": strings.Join}).Parse(`#!/bin/bash
# Generated by benchctl submit for {{if .Job.Tags}}the models tagged {{q (join .Job.Tags ",")}} of the MAD checkout {{q .Job.Checkout}}{{else}}manifest {{q .Job.Manifest}}{{end}}.
# Submitted with (every option one argument, no shell involved):
#   sbatch{{range .Argv}} {{q .}}{{end}} <this script>
set -euo pipefail

# The job folder: jobs/<job id>, or jobs/<job id>.<attempt> after a requeue. The nodes
# create it too; it must be a real folder of this user, never a link or a folder that
# someone else planted there.
jobs_dir={{q .Job.SharedDir}}/{{.Names.Jobs}}
job_dir="$jobs_dir/${SLURM_JOB_ID:?not running under sbatch}"
if [ "${SLURM_RESTART_COUNT:-0}" != 0 ]; then job_dir="$job_dir{{.Names.Attempt}}$SLURM_RESTART_COUNT"; fi
mkdir -p "$jobs_dir"
mkdir "$job_dir" 2>/dev/null || true
if [ -L "$job_dir" ] || [ ! -d "$job_dir" ] || [ ! -O "$job_dir" ]; then
	echo "benchctl: $job_dir is not a folder of this user (a link, or someone else's); not writing there: remove it and submit again" >&2
	exit 4
fi
exec >>"$job_dir/{{.Names.Out}}" 2>>"$job_dir/{{.Names.Err}}"

export BENCHCTL_SHARED_DIR={{q .Job.SharedDir}}
# The job channel's secret: benchctl run reads it from this file, and refuses a file that
# is not a private (0600) regular file of this user. It is never in this script or in the
# environment.
unset BENCHCTL_JOB_SECRET
export BENCHCTL_JOB_SECRET_FILE={{q .Job.SecretFile}}

{{if .Job.Tags}}# The MAD checkout: benchctl run --tags reads its models.json and mounts it.
cd {{q .Job.Checkout}}

{{end}}# One task per node; benchctl does the rest (barrier, image, containers, status files).
status=0
srun --ntasks-per-node=1 --kill-on-bad-exit=0 {{q .Job.Benchctl}} run {{if .Job.Tags}}--tags {{q (join .Job.Tags ",")}}{{if .Job.Context}} --context {{q .Job.Context}}{{end}}{{if .Job.ContextFile}} --context-file {{q .Job.ContextFile}}{{end}}{{if .Job.RunGenerators}} --run-get-models-json{{end}}{{else}}--manifest {{q .Job.Manifest}}{{end}}{{if .Job.Record}} --record {{q .Job.Record}}{{end}}{{if .Job.Benchmarks}} --benchmarks {{q (join .Job.Benchmarks ",")}}{{end}}{{if .Job.ToolsSet}} --tools {{q (join .Job.Tools ",")}}{{end}}{{if .Job.ToolsFile}} --tools-file {{q .Job.ToolsFile}}{{end}}{{if .Job.Engine}} --engine {{q .Job.Engine}}{{end}}{{if .Job.Runtime}} --runtime {{q .Job.Runtime}}{{end}} || status=$?

# Whatever the run's end, one bounded cleanup on every node: a node whose benchctl was
# killed (its status.json still says running) is recorded as lost, on that node, and the
# job's containers left behind are removed. It never changes the job's exit code.
timeout -k 10 {{.CleanupSeconds}} srun --ntasks-per-node=1 --kill-on-bad-exit=0 {{q .Job.Benchctl}} cleanup --job "$SLURM_JOB_ID" --outcome lost{{if .Job.Engine}} --engine {{q .Job.Engine}}{{end}}{{if .Job.Runtime}} --runtime {{q .Job.Runtime}}{{end}} ||
	echo "benchctl: the cleanup step ended with exit $?; the job's exit code is the run's ($status)" >&2
exit "$status"
`))
})

// CleanupSeconds bounds the cleanup step the job script runs after the run (the srun
// that starts it included); each Engine call of benchctl cleanup is bounded by 5 s.
const CleanupSeconds = 120

// scriptNames are the job folder's names the script spells in shell (jobdir owns them).
type scriptNames struct{ Jobs, Attempt, Out, Err string }

// Script renders the job script.
func (j Job) Script() (string, error) {
	var b bytes.Buffer
	err := scriptTmpl().Execute(&b, struct {
		Job            Job
		Argv           []string
		CleanupSeconds int
		Names          scriptNames
	}{j, j.SbatchArgv(), CleanupSeconds, scriptNames{jobdir.JobsFolder, jobdir.AttemptDivider, jobdir.SbatchOutFile, jobdir.SbatchErrFile}})
	return b.String(), err
}
