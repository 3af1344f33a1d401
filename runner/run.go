package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchctl/benchctl/runner/enginefacts"

	"github.com/benchctl/benchctl/internal/timeline"

	"github.com/benchctl/benchctl/runner/judge"
	"github.com/benchctl/benchctl/runner/workspace"

	"github.com/benchctl/benchctl/runner/podman"

	"github.com/benchctl/benchctl/distribution"
	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobchan"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/logscan"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/telemetry"
	"github.com/benchctl/benchctl/workload"
	"github.com/benchctl/benchctl/workload/engine"
)

// Options configure Run and Plan.
type Options struct {
	Manifest   *manifest.Manifest
	SharedDir  string
	Records    []*image.Record // pin the images (from `benchctl build --record`)
	Benchmarks []string        // run only these (default: all)
	Lookup     func(string) (string, bool)
	Environ    []string
	Version    string
	Engine     func() (Engine, error) // built lazily
	// EngineKind is the engine the run asks for (image.KindDocker, image.KindPodman; "":
	// any): another kind answering is an error (DOCKER_HOST may name one).
	EngineKind string
	Progress   image.ProgressFunc
	Stream     io.Writer // container output, each line prefixed with rank and host
	Log        *slog.Logger
	// BarrierTimeout bounds every wait at the barrier (rank 0 may be building).
	BarrierTimeout time.Duration
	// OpenSampler opens the GPU telemetry (nil: gpu.OpenSampler for the node's GPUs).
	OpenSampler OpenSampler
	// NoSkipGPUArch runs MAD models whatever their skip_gpu_arch says
	// (madengine's --disable-skip-gpu-arch).
	NoSkipGPUArch bool
	// Heartbeat overrides the manifest's job.heartbeat (0: the manifest's, else 5 s).
	Heartbeat time.Duration
	// SysfsRoot, when set, is where the GPU inventory reads /sys, /proc and /opt/rocm: a
	// recorded tree (tests, and checking what a node would do with another node's GPUs).
	SysfsRoot string
	// Catalog clones MAD models' urls and measures their data sets (models.JobCatalog{}; nil:
	// a run of benchmarks that need neither).
	Catalog Catalog
	// Node is this process's place in the job (scheduler.DetectNode): required.
	Node Node
	// Runtime, when set, is the runtime the benchmarks' processes run in, made from the
	// node's engine (nil: workload/engine's, the engine's containers). Tests hand in a fake
	// to make its calls fail or hang.
	Runtime func(Engine) workload.Runtime
}

// runtime is the Runtime of the node's engine.
func (o Options) runtime(eng Engine) workload.Runtime {
	if o.Runtime != nil {
		return o.Runtime(eng)
	}
	return engine.New(eng)
}

// Result is what Run did on this node.
type Result struct {
	Node    Node
	JobDir  string
	NodeDir string
	Status  Status
}

// RunError is a benchmark that did not succeed on this node: exit code 3 (or what an
// abort asked for).
type RunError struct {
	Msg  string
	Code int
}

func (e *RunError) Error() string { return e.Msg }

// ExitCode is 3 (a benchmark failed) unless another code was asked for.
func (e *RunError) ExitCode() int {
	if e.Code == 0 {
		return exitcode.Run
	}
	return e.Code
}

// SelectBenchmarks returns the benchmarks to run, in manifest order.
func SelectBenchmarks(m *manifest.Manifest, names []string) ([]manifest.Benchmark, error) {
	if len(names) == 0 {
		return m.Benchmarks, nil
	}
	var all []string
	for _, b := range m.Benchmarks {
		all = append(all, b.Name)
	}
	want := map[string]bool{}
	for _, n := range names {
		if _, ok := m.Benchmark(n); !ok {
			return nil, &ContextError{"--benchmarks", fmt.Sprintf("%q is not a benchmark of %s (it has: %s)", n, m.Name, strings.Join(all, ", "))}
		}
		want[n] = true // a name given twice runs once
	}
	var out []manifest.Benchmark
	for _, b := range m.Benchmarks {
		if want[b.Name] {
			out = append(out, b)
		}
	}
	return out, nil
}

// SecretUnsetError is a secret of the manifest that is not set where run starts: the
// benchmarks would get it empty. Bad input (exit 4).
type SecretUnsetError struct{ Manifest, Name string }

func (e *SecretUnsetError) Error() string {
	return fmt.Sprintf("%s: secrets: %s is not set, so the benchmarks would get it empty; export %s before benchctl run (under Slurm, before sbatch or srun: they pass the environment on), or remove it from secrets",
		e.Manifest, e.Name, e.Name)
}

// InvalidInput marks the error as bad input.
func (e *SecretUnsetError) InvalidInput() bool { return true }

// CheckSecrets returns a *SecretUnsetError for the first secret lookup does not have. A
// run needs them all; a dry run (Plan) may be made where they are not.
func CheckSecrets(m *manifest.Manifest, lookup func(string) (string, bool)) error {
	for _, name := range m.Secrets {
		if _, ok := lookup(name); !ok {
			return &SecretUnsetError{Manifest: m.Path, Name: name}
		}
	}
	return nil
}

// Run runs the manifest's benchmarks on this node as one rank of the job, and always
// leaves nodes/<rank>-<host>/status.json in the job folder.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	node, err := o.node()
	if err != nil {
		return nil, err
	}
	benches, err := SelectBenchmarks(o.Manifest, o.Benchmarks)
	if err != nil {
		return nil, err
	}
	if err := CheckSecrets(o.Manifest, o.Lookup); err != nil {
		return nil, err
	}
	if err := CheckExperimentFits(o.Manifest.Experiment, node.World); err != nil {
		return nil, err
	}
	// The job and node folders are opened once (a real folder of this user, not a link)
	// and every file of the node is written through them.
	timeline.Mark("node context")
	job, err := jobdir.Layout{Shared: o.SharedDir}.CreateJob(node.JobID, node.Attempt)
	if err != nil {
		return nil, fmt.Errorf("creating the job folder: %w", err)
	}
	defer job.Close()
	nf, err := job.CreateNode(node.Rank, node.Host)
	if err != nil {
		return nil, fmt.Errorf("creating the node folder: %w", err)
	}
	defer nf.Close()
	dir, nd := job.Dir, nf.NodeDir
	nlog := log.With("rank", node.Rank, "host", node.Host)
	st := newStatusFile(nf, node)
	st.SetLog(nlog)
	res = &Result{Node: node, JobDir: dir.Path, NodeDir: nd.Path}
	r := &nodeRun{o: o, log: nlog, node: node, dir: dir, nd: nd, job: job, nf: nf, st: st, benches: benches}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
			st.Finish(OutcomeFailure, exitcode.Failure, err)
		}
		res.Status = st.Snapshot()
	}()
	r.log.Info("node context", "job", node.JobID, "attempt", node.Attempt, "world", node.World, "master", node.MasterAddr, "source", node.Source)
	st.Phase(jobdir.PhaseContext)(nil)
	err = r.run(ctx, benches)
	r.bg.Wait() // node.json, job.json's engine and its sync: before the node's last status
	outcome, code := OutcomeSuccess, 0
	var ae *jobchan.AbortError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		outcome, code = OutcomeCancelled, exitcode.Run
	case errors.As(err, &ae):
		outcome, code = OutcomeFailure, ae.ExitCode()
	default: // a failed build is exit 2 (image.BuildError), bad input 4
		outcome, code = OutcomeFailure, exitcode.Of(err)
	}
	timeline.Mark("node run")
	st.Finish(outcome, code, err)
	timeline.Mark("status final")
	if outcome == OutcomeCancelled {
		err = &RunError{Msg: "cancelled: " + err.Error(), Code: code}
	}
	if werr := st.WriteErr(); werr != nil && err == nil {
		// The benchmarks ran, but the job folder does not say so: collect would call
		// this node lost. Not a success.
		err = fmt.Errorf("recording this node's status: %w", werr)
	}
	return res, err
}

// nodeRun is one node's run in progress.
type nodeRun struct {
	rt      workload.Runtime // where the benchmarks' processes run
	o       Options
	log     *slog.Logger
	node    Node
	dir     jobdir.Dir
	nd      jobdir.NodeDir
	job     *jobdir.Folder     // dir, open: every write of the job folder goes through it
	nf      *jobdir.NodeFolder // nd, open
	st      *statusFile
	leader  *jobchan.Leader
	worker  *jobchan.Worker
	secret  []byte               // the job channel's secret (jobs of several nodes)
	chanCfg jobchan.Config       // the job channel's settings (jobs of several nodes)
	mpi     *mpiNode             // the MPI launchers' agent and service (nil: no MPI benchmark)
	benches []manifest.Benchmark // the ones to run (--benchmarks, else all)
	// resume is the last trial of the plan an earlier attempt finished (rank 0 finds it;
	// shareResume tells the others), and trialSources where those trials are.
	resume       int
	trialSources []jobdir.TrialSource
	// plan is the experiment's plan, made by rank 0 (or taken over from the attempt it
	// resumes) and written in job.json's trialOrder, where the other ranks read it.
	plan []manifest.Trial
	// removals are the ended containers still being removed (reap).
	removals sync.WaitGroup
	// tel samples the GPUs while each container runs (nil before the GPUs are selected).
	tel *telemetry.Node
	// engine is which engine this node's containers run in (zero until asked): what its
	// ping said (image.IdentifyQuick), all the containers need.
	engine image.Identity
	// facts are the engine's facts, asked once (its /version and /info).
	facts *enginefacts.Once
	// completeEngine completes the engine's identity from its facts (nil: it was complete
	// at once), and afterStart starts what waits for the first container's start (nil
	// before the containers, and under the process runtime).
	completeEngine func(context.Context)
	afterStart     func()
	// bg is the work beside the critical path (the engine's whole identity, node.json):
	// waited for before the node ends.
	bg sync.WaitGroup
	// jobMu guards job.json's writes and what they hold that is learnt beside the critical
	// path: the engine's whole identity (fullEngine, nil until said) and the job's images.
	jobMu      sync.Mutex
	fullEngine *image.Identity
	jobImages  []distribution.Image
	// jobSyncing: a sync of job.json is under way (syncJobLater); jobDirty: it was
	// rewritten since that sync began.
	jobSyncing, jobDirty bool
	// imageUsers are the images' USER (containerUser), by image: read once per job.
	imageUsers sync.Map
	// numericUsers are container users put in numbers (podman.NumericUser), by image and user:
	// read once per image, not once per trial.
	numericUsers sync.Map
}

// reap removes an ended container while the node records it and goes on to the next
// benchmark, or the next trial's meeting; the benchmarks (and the trials) wait for every
// removal before they end.
func (r *nodeRun) reap(remove func()) { r.removals.Go(remove) }

// run is one node's run, after its node context: the GPUs, meeting the other nodes on the
// job channel, the image phase (package distribution), the benchmark containers, and
// waiting for the job to finish.
func (r *nodeRun) run(ctx context.Context, benches []manifest.Benchmark) error {
	if r.node.Rank == 0 {
		// The data sets' sizes, for job.json (perf.csv's data_size): rank 0 alone walks them.
		r.o.catalog().MeasureData(r.o.Manifest.Benchmarks)
		if x := r.o.Manifest.Experiment; x != nil {
			r.plan = x.Plan(x.PlanSeed(r.node.JobID))
			r.resume, r.trialSources = r.resumePoint(x, &r.plan, benches)
		}
		if err := r.writeJob(nil); err != nil {
			return err
		}
	}
	timeline.Mark("job folder")
	gpus, err := r.gpus(ctx, benches)
	timeline.Mark("gpus")
	if err != nil {
		return err
	}
	if r.o.Manifest.Process() {
		gpus.forProcess() // before they are logged: a process sees them by the node's numbering
	}
	r.tel = r.telemetry(gpus.GPUAccess)
	r.tel.WriteLater(r.bg.Go) // each run's summary is written beside the critical path
	defer r.tel.Close()
	timeline.Mark("telemetry")
	if err := r.meet(ctx); err != nil {
		return err
	}
	timeline.Mark("met")
	defer r.closeBarrier()
	ctx, stop := r.supervise(ctx)
	defer stop()
	if err := r.agreeOnCatalog(ctx, benches); err != nil {
		return err
	}
	timeline.Mark("catalog")
	if gpus.Vendor != manifest.VendorNone {
		r.log.Info("gpus", "access", strings.Join(gpus.Describe(), "; "))
	}
	if note := hipVersionNote(r.o.Manifest, gpus.GPUAccess); note != "" {
		r.log.Info(note)
	}

	if r.o.Manifest.Process() {
		imgs, done, err := r.processes(ctx, gpus)
		if err != nil {
			return err
		}
		defer done()
		timeline.Mark("processes ready")
		if err := r.containers(ctx, nil, benches, imgs, gpus); err != nil {
			return err
		}
		timeline.Mark("benchmarks done")
		r.finishJob(ctx)
		timeline.Mark("job finished")
		return nil
	}

	eng, err := r.o.Engine()
	timeline.Mark("engine client")
	if err != nil {
		r.fail(err, exitcode.Failure)
		return err
	}
	defer eng.Close()
	defer r.bg.Wait() // what runs beside the critical path ends before the engine's client closes
	r.rt = r.o.runtime(eng)
	r.facts = enginefacts.Ask(ctx, enginefacts.For(r.rt, gpus.Vendor))
	if r.engine, err = r.identifyEngine(ctx, eng); err != nil {
		r.fail(err, exitcode.Of(err))
		return err
	}
	timeline.Mark("engine identified")
	if err := podman.CheckEngineLimits(r.engine, r.o.Manifest, benches, podman.ThisHost(r.engine)); err != nil {
		r.fail(err, exitcode.Of(err))
		return err
	}
	if err := r.engineGPUs(ctx, r.facts, gpus); err != nil {
		r.fail(err, exitcode.Of(err))
		return err
	}
	r.removeLeftovers(ctx, r.rt)
	record := r.gatherNodeRecord(ctx, gpus, false)
	go r.tel.Start(ctx) // the GPU library opens while the images arrive, not at the first start
	imgs, err := r.images(ctx, eng)
	timeline.Mark("images")
	if err != nil {
		if r.completeEngine != nil { // job.json's engine: a short wait, the node is failing
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			r.completeEngine(cctx)
			cancel()
		}
		r.writeNodeRecord(ctx, eng, record, nil, err)
		return err
	}
	// What no container waits for is done once the first has started, beside the benchmark
	// rather than in front of it (the engine's /version and /info would slow its create and
	// start): the engine's whole identity, node.json. Before the node ends (r.bg).
	r.afterStart = sync.OnceFunc(func() {
		if r.completeEngine != nil {
			r.bg.Go(func() { r.completeEngine(ctx) })
		}
		r.bg.Go(func() { r.writeNodeRecord(ctx, eng, record, imgs, nil) })
	})
	err = r.containers(ctx, eng, benches, imgs, gpus)
	r.afterStart() // no container started
	if err != nil {
		return err
	}
	timeline.Mark("containers")
	r.finishJob(ctx)
	return nil
}

// nodeGPUs is this node's GPUs, and each benchmark's share of them (n_gpus) and why
// skip_gpu_arch skips it ("": it runs).
type nodeGPUs struct {
	GPUAccess
	access []GPUAccess
	skips  []string
}

// gpus selects this node's GPUs and decides each model's (n_gpus, skip_gpu_arch) before any
// container starts; a failure is told to the job before the job channel is up.
func (r *nodeRun) gpus(ctx context.Context, benches []manifest.Benchmark) (*nodeGPUs, error) {
	sel, err := SelectGPUs(r.o.Manifest.GPU, r.o.Lookup, r.o.SysfsRoot)
	if err != nil {
		r.failEarly(ctx, err)
		return nil, err
	}
	if len(sel.System) > 0 {
		r.st.Update(func(s *Status) {
			s.GPUCount, s.GPUArch, s.GPUName = len(sel.System), sel.System[0].Arch, sel.System[0].Name
		})
	}
	g := &nodeGPUs{GPUAccess: sel, access: make([]GPUAccess, len(benches)), skips: make([]string, len(benches))}
	for i, b := range benches {
		if g.access[i], err = modelGPUs(b, sel); err != nil {
			r.failEarly(ctx, err)
			return nil, err
		}
		if err = checkLauncher(b, r.node, g.access[i], r.o.Manifest.Experiment); err != nil {
			r.failEarly(ctx, err)
			return nil, err
		}
		if !r.o.NoSkipGPUArch {
			g.skips[i] = skipArch(b, sel)
		}
	}
	return g, nil
}

// containers runs the benchmarks, one container each, in the manifest's order; those of a
// job of several nodes start together.
func (r *nodeRun) containers(ctx context.Context, eng Engine, benches []manifest.Benchmark, imgs *distribution.Images, gpus *nodeGPUs) error {
	closeMPI, err := r.startMPI(ctx, eng, benches, imgs)
	if err != nil {
		r.skip(benches, err)
		return err
	}
	defer closeMPI()
	// An ended container is removed while the node records it and goes on (reap): no
	// container outlives the benchmarks.
	defer r.removals.Wait()
	if x := r.o.Manifest.Experiment; x != nil {
		return r.trials(ctx, eng, x, benches, imgs, gpus)
	}
	n := r.node
	end := r.st.Phase(jobdir.PhaseRun)
	var failed []string
	for i, b := range benches {
		if n.World > 1 && i > 0 { // multi-node benchmarks start together
			if err := r.phase(ctx, "start:"+b.Name, nil); err != nil {
				r.skip(benches[i:], err)
				end(err)
				return err
			}
		}
		if ctx.Err() != nil {
			r.skip(benches[i:], context.Cause(ctx))
			break
		}
		if gpus.skips[i] != "" {
			r.log.Info("benchmark skipped", "benchmark", b.Name, "why", gpus.skips[i])
			r.st.Update(func(s *Status) {
				s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: b.Name, Outcome: OutcomeSkipped, Error: gpus.skips[i]})
			})
			continue
		}
		res := r.runOne(ctx, eng, b, imgs.For(b.Name), gpus.access[i], nil)
		if res.Outcome == OutcomeSuccess || res.Outcome == OutcomeAborted {
			continue
		}
		failed = append(failed, b.Name)
		if b.Aborts(n.World) && ctx.Err() == nil {
			r.failBenchmark(b, res)
			r.skip(benches[i+1:], fmt.Errorf("benchmark %s failed on %s (onFailure: abort)", b.Name, n.Host))
			break
		}
	}
	if len(failed) > 0 {
		err := &RunError{Msg: fmt.Sprintf("%d of %d benchmarks failed on %s: %s", len(failed), len(benches), n.Host, strings.Join(failed, ", "))}
		end(err)
		r.checkResults(benches)
		return err
	}
	if ctx.Err() != nil { // cancelled (SIGTERM), or the job channel's verdict
		err := context.Cause(ctx)
		end(err)
		return err
	}
	end(nil)
	r.checkResults(benches)
	return nil
}

// supervise returns a context that ends with the job channel's verdict as its cause when
// rank 0 aborts the job or is lost (a worker), or a rank is lost (rank 0).
func (r *nodeRun) supervise(ctx context.Context) (context.Context, context.CancelFunc) {
	var done <-chan struct{}
	var verdict func() error
	switch {
	case r.leader != nil:
		done, verdict = r.leader.Done(), r.leader.Err
	case r.worker != nil:
		done, verdict = r.worker.Done(), r.worker.Err
	default:
		return context.WithCancel(ctx)
	}
	sctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-done:
			err := verdict()
			r.log.Error("job channel: stopping this node", "why", err)
			cancel(err)
		case <-sctx.Done():
		}
	}()
	return sctx, func() { cancel(nil) }
}

// failBenchmark tells the job that b failed on this node, so that rank 0 aborts it.
func (r *nodeRun) failBenchmark(b manifest.Benchmark, res execResult) {
	reason := fmt.Sprintf("failed benchmark %s: %v", b.Name, res.Err)
	switch {
	case r.leader != nil:
		r.leader.Abort(jobchan.TruncateReason(fmt.Sprintf("rank 0 (%s) %s", r.node.Host, reason)), exitcode.Run)
	case r.worker != nil:
		if err := r.worker.Fail(reason, exitcode.Run); err != nil {
			r.log.Warn("could not tell rank 0 that the benchmark failed", "err", err)
		}
	}
}

// skip records benchmarks that were not run, and why.
func (r *nodeRun) skip(benches []manifest.Benchmark, why error) {
	if len(benches) == 0 {
		return
	}
	msg := "not run"
	if why != nil {
		msg += ": " + why.Error()
	}
	r.st.Update(func(s *Status) {
		for _, b := range benches {
			s.Benchmarks = append(s.Benchmarks, BenchmarkStatus{Name: b.Name, Outcome: OutcomeSkipped, Error: msg})
		}
	})
}

// finishJob keeps rank 0 (and a relay, for its group) on the job channel until every worker
// has finished (or is lost, or the job is aborted): a worker's failure after rank 0's own
// last benchmark still aborts the others.
func (r *nodeRun) finishJob(ctx context.Context) {
	switch {
	case r.leader != nil:
		if n := len(r.leader.Connected()); n > 0 {
			r.log.Info("waiting for the other nodes to finish", "running", n)
		}
		r.leader.Finish(ctx)
	case r.worker != nil: // a relay waits for its group
		r.worker.Finish(ctx)
	}
}

// logScanner is the log error scan of a benchmark, or nil when it is off. As in madengine,
// where the run's context wins over the model: the manifest's logScan.errors, else a MAD
// model's log_error_patterns, else the defaults; benign lines are the manifest's
// logScan.benign (else the defaults) and the model's log_error_benign_patterns. The
// defaults are madengine's for a MAD model (logscan.MadengineDefaults) and benchctl's own
// for a manifest's benchmark (logscan.Defaults), which does not fail on "Exception: none".
func logScanner(l manifest.LogScan, b manifest.Benchmark) *logscan.Scanner {
	if l.Disabled || b.NoLogScan {
		return nil
	}
	rules := logscan.Defaults()
	if b.Model != nil {
		rules = logscan.MadengineDefaults()
	}
	switch {
	case l.Errors != nil:
		rules.Errors = l.Errors
	case b.LogErrors != nil:
		rules.Errors = b.LogErrors
	}
	if l.Benign != nil {
		rules.Benign = l.Benign
	}
	rules.Benign = append(slices.Clip(rules.Benign), b.LogBenign...)
	return logscan.New(rules)
}

// containerUser is the user a container of the image runs as: the manifest's
// container.user, else the image's USER ("" for root, or when the engine cannot say),
// read once per image for the job (r.imageUsers), not once per benchmark or trial.
func (r *nodeRun) containerUser(ctx context.Context, eng Engine, manifestUser, ref string) string {
	if manifestUser != "" || eng == nil {
		return manifestUser
	}
	if u, ok := r.imageUsers.Load(ref); ok {
		return u.(string)
	}
	res, err := eng.ImageInspect(ctx, ref)
	if err != nil || res.Config == nil {
		return "" // not kept: the next benchmark asks again
	}
	r.imageUsers.Store(ref, res.Config.User)
	return res.Config.User
}

// runOne runs a benchmark container and records how it ended.
// A trial's run (tr non-nil) has its own files (jobdir.TrialRunName), container name and
// record, the variant's node variables and the trial's BENCHCTL_* variables.
func (r *nodeRun) runOne(ctx context.Context, eng Engine, b manifest.Benchmark, img distribution.Image, gpus GPUAccess, tr *trialRun) execResult {
	name, node, rec := b.Name, r.node, BenchmarkStatus{Name: b.Name}
	if tr != nil {
		name, node = jobdir.TrialRunName(b.Name, tr.t.Seq), variantNode(r.node, tr.v.Nodes)
		rec.Trial, rec.Variant, rec.VariantTrial, rec.Warmup = tr.t.Seq, tr.v.ID, tr.t.N, tr.t.Warmup
	}
	resultsDir := r.nd.Results(name)
	logName := jobdir.LogName(name)
	ctrUser := r.o.Manifest.Container.User
	if b.Container != nil { // a MAD model's additional_docker_run_options, as BuildSpec takes them
		ctrUser = b.Container.User
	}
	cu := ""
	if eng != nil { // a process runs as benchctl's user
		cu = r.containerUser(ctx, eng, ctrUser, img.RunRef())
	}
	if r.engine.Podman() && r.engine.Rootless { // keep-id needs numbers: the image's /etc/passwd says them
		k := img.RunRef() + "\x00" + cu
		if v, ok := r.numericUsers.Load(k); ok {
			cu = v.(string)
		} else {
			cu = podman.NumericUser(ctx, eng, img.RunRef(), cu, map[string]string{LabelJob: r.node.JobID,
				LabelAttempt: strconv.Itoa(r.node.Attempt), LabelRank: strconv.Itoa(r.node.Rank), LabelBenchmark: name})
			r.numericUsers.Store(k, cu)
		}
	}
	userNS, hint := podman.KeepIDMode(r.engine, cu)
	if hint != "" {
		r.log.Warn(hint, "benchmark", name)
	}
	if userNS != "" { // the container's user is this process's user (podman.KeepIDMode)
		cu = strconv.Itoa(os.Getuid())
	}
	timeline.Mark("container user")
	if err := makeResultsDir(r.nf, name, cu, r.log); err != nil {
		r.log.Error("creating the results folder", "err", err)
	}
	if hf := deepSpeedHostfile(b, node, gpus); hf != nil {
		if err := writeDeepSpeedHostfile(r.nf, name, hf); err != nil {
			r.log.Error("writing the deepspeed hostfile", "file", DeepSpeedHostfile, "err", err)
		}
	}
	dirs := RunDirs{Results: resultsDir}
	if r.o.Manifest.Process() {
		dirs.Output = resultsDir // a process sees its results folder where it is
	}
	var wsErr error
	if workspace.In(b) {
		dirs.Workspace, wsErr = workspace.Make(ctx, r.nf, r.nd, r.dir.Clones(), name, b, resultsMode(cu, os.Getuid()), r.o.Manifest.Process())
	}
	timeline.Mark("run dirs")
	spec := BuildSpecAt(r.o.Manifest, b, node, img.RunRef(), img.Key, dirs, gpus, r.o.Environ)
	spec.Engine, spec.UserNS = r.engine, userNS
	if tr != nil {
		spec = withTrial(spec, tr.v, tr.t)
	}
	if r.o.Manifest.Process() {
		spec = withEnviron(processPaths(spec, resultsDir), r.o.Environ)
		if dirs.Workspace != "" {
			spec = processWorkspace(spec, dirs.Workspace)
			for _, n := range catalogProcessNotes(b) {
				r.log.Info("MAD model under the process runtime: "+n, "benchmark", b.Name)
			}
		}
	}
	mpi := manifest.MPILauncher(b.Launcher) && r.mpi != nil
	if mpi {
		if r.mpi.svc != nil && node.Rank == 0 {
			r.mpi.svc.Launching(name, node.World)
		}
		var err error
		if spec, err = r.mpiSpec(spec, b, node, gpus); err != nil && wsErr == nil {
			wsErr = err
		}
	}
	start := time.Now().UTC()
	rec.Outcome, rec.StartedAt, rec.Log, rec.GPUs, rec.ImageID = OutcomeRunning, start, logName, len(gpus.GPUs), img.ID
	r.st.UpdateNow(func(s *Status) { s.Benchmarks = append(s.Benchmarks, rec) })
	what := "container"
	if r.o.Manifest.Process() {
		what = "process"
	}
	logArgs := []any{"benchmark", b.Name, what, spec.Name, "timeout", time.Duration(b.Timeout).String()}
	if tr != nil {
		logArgs = append(logArgs, "trial", tr.t.Seq, "variant", tr.v.ID, "variantTrial", tr.t.N, "warmup", tr.t.Warmup)
	}
	r.log.Info("benchmark starting", logArgs...)
	timeline.Mark("status running")
	stream := r.o.Stream
	if stream == nil {
		stream = io.Discard
	}
	var out io.Writer = &prefixWriter{w: stream, prefix: fmt.Sprintf("[r%d %s %s] ", r.node.Rank, r.node.Host, name)}
	scan := logScanner(r.o.Manifest.LogScan, b)
	if scan != nil {
		out = io.MultiWriter(out, scan)
	}
	bud, watch := defaultBudget(), toolWatcher(spec)
	if watch != nil {
		out = io.MultiWriter(out, watch)
		if spec.Tools.HasPost { // post scripts run after a timeout's SIGTERM too
			bud.stopGrace = ToolStopGrace
		}
	}
	var res execResult
	if wsErr != nil { // the model cannot run as madengine runs it: no container is started
		res = execResult{Outcome: OutcomeFailure, ExitCode: -1, Err: &workspace.Error{Run: name, Err: wsErr}}
	} else {
		stopSampling := r.sampleDuring(ctx, name, gpus)
		bud.started = func(id string) {
			if r.afterStart != nil {
				r.afterStart()
			}
			if mpi {
				r.mpiStarted(name, id)
			}
		}
		res = runContainer(ctx, r.rt, spec, time.Duration(b.Timeout), nodeFiles{r.nf, name}, out, bud, r.reap)
		timeline.Mark("container done")
		stopSampling()
		timeline.Mark("sampling stopped")
		if mpi {
			res = r.mpiEnded(ctx, name, node.World, res)
		}
	}
	res = toolOutcome(res, watch)
	if moved, err := rescueToolsDir(spec, resultsDir); err != nil { // the container ended before its tools' script did
		r.log.Warn("the tools' directory", "benchmark", name, "err", err)
	} else if moved != "" {
		r.log.Info("the tools' directory the container left is moved to the results", "benchmark", name, "from", moved)
	}
	if from, passed, err := workspace.KeepResults(b, resultsDir, dirs.Workspace); err != nil {
		r.log.Warn("the results file the model left in its workspace could not be kept", "benchmark", name, "from", from, "err", err)
	} else if from != "" {
		r.log.Info("results file found where madengine looks, kept in the results folder", "benchmark", name, "from", from, "file", b.Results)
	} else if len(passed) > 0 {
		r.log.Warn("a results file in the workspace was not read", "benchmark", name, "why", strings.Join(passed, "; "))
	}
	if res.Outcome == OutcomeSuccess && scan != nil {
		if m := scan.Match(); m != nil { // madengine's rule: an error in the log fails the run, whatever the exit code
			res = execResult{Outcome: OutcomeFailure, ExitCode: res.ExitCode,
				Err: fmt.Errorf("the container exited 0, but its log has an error: %s (turn the scan off with logScan: false)", redactorOf(spec).Redact(m.String()))}
		}
	}
	if res.Outcome == OutcomeSuccess && (len(b.Figures) > 0 || b.Success != nil) && !(mpi && node.Rank != 0) { // MPI: rank 0's output
		why, err := judge.Output(r.nf, r.nd, name, b, filepath.Join(r.nd.Path, logName))
		if err != nil {
			why = err.Error()
		}
		if why != "" {
			res = execResult{Outcome: OutcomeFailure, ExitCode: res.ExitCode, Err: fmt.Errorf("the benchmark exited 0, but %s", why)}
		}
	}
	timeline.Mark("judged")
	end := time.Now().UTC()
	record := func(bs *BenchmarkStatus) {
		bs.Outcome, bs.ExitCode, bs.FinishedAt = res.Outcome, res.ExitCode, &end
		bs.DurationSeconds = end.Sub(start).Seconds()
		if res.Err != nil {
			bs.Error = statusError(spec, res.Err)
		}
		if res.DiagDir != "" {
			bs.Diagnostics = jobdir.DiagRel(name)
		}
	}
	if tr != nil { // a trial's record moves to the trial log: status.json keeps its size
		if err := r.st.EndTrial(record); err != nil {
			r.log.Warn("the trial's record could not be appended to the trial log; it stays in status.json", "trial", tr.t.Seq, "err", err)
		}
	} else {
		r.st.Update(func(s *Status) { record(&s.Benchmarks[len(s.Benchmarks)-1]) })
	}
	if res.Outcome != OutcomeSuccess {
		r.log.Error("benchmark failed", "benchmark", name, "outcome", res.Outcome, "err", statusError(spec, res.Err), "diagnostics", res.DiagDir)
		return res
	}
	r.log.Info("benchmark finished", "benchmark", name, "seconds", fmt.Sprintf("%.1f", end.Sub(start).Seconds()))
	return res
}

// checkResults notes benchmarks whose declared results file was not written.
func (r *nodeRun) checkResults(benches []manifest.Benchmark) {
	end := r.st.Phase(jobdir.PhaseResults)
	var missing []string
	for _, b := range benches {
		if b.Results == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(r.nd.Results(b.Name), b.Results)); err != nil {
			missing = append(missing, fmt.Sprintf("%s did not write %s", b.Name, b.Results))
		}
	}
	if len(missing) > 0 {
		// Not an error here: many multi-node benchmarks write results on rank 0 only.
		// collect decides per benchmark, across nodes.
		r.log.Info("no results file on this node", "which", strings.Join(missing, "; "))
	}
	end(nil)
}

// writeJob writes job.json (rank 0): the redacted manifest, nodes, times, images.
func (r *nodeRun) writeJob(imgs []distribution.Image) error {
	r.jobMu.Lock()
	defer r.jobMu.Unlock()
	if imgs != nil {
		r.jobImages = imgs
	}
	imgs = r.jobImages
	j := &jobdir.Job{Job: r.node.JobID, Attempt: r.node.Attempt, World: r.node.World, Nodes: r.node.Hosts,
		StartedAt: r.st.StartedAt(), BenchctlVersion: r.o.Version, Source: r.node.Source, Namespace: r.node.Placement.Namespace}
	if err := j.SetManifest(r.o.Manifest.Redacted()); err != nil {
		return err
	}
	if x := r.o.Manifest.Experiment; x != nil && x.Order == manifest.OrderShuffle {
		seed := x.PlanSeed(r.node.JobID)
		j.TrialSeed = &seed
	}
	j.TrialSources = r.trialSources
	if r.plan != nil {
		j.TrialOrder = manifest.TrialOrder(r.plan)
	}
	if r.fullEngine != nil {
		j.Engine = jobEngine(*r.fullEngine)
	}
	if len(imgs) > 0 {
		j.Image = r.jobImage(imgs[0], false)
	}
	if len(imgs) > 1 {
		for _, img := range imgs {
			j.Images = append(j.Images, r.jobImage(img, true))
		}
	}
	if v, ok := r.o.Lookup("BUILD_NUMBER"); ok {
		j.BuildNumber = strings.TrimSpace(v)
	}
	if len(r.o.Benchmarks) > 0 { // --benchmarks: collect expects only these
		for _, b := range r.benches {
			j.Benchmarks = append(j.Benchmarks, b.Name)
		}
	}
	if err := r.job.ReplaceJob(j); err != nil {
		return err
	}
	r.syncJobLater()
	return nil
}

// syncJobLater makes job.json durable beside the critical path (r.bg, before the node
// ends): one sync at a time, and one more when it was rewritten meanwhile. Called with
// r.jobMu held.
func (r *nodeRun) syncJobLater() {
	if r.jobSyncing {
		r.jobDirty = true
		return
	}
	r.jobSyncing = true
	r.bg.Go(func() {
		for {
			err := r.job.SyncJob()
			r.jobMu.Lock()
			if err != nil || !r.jobDirty {
				r.jobSyncing = false
				r.jobMu.Unlock()
				if err != nil {
					r.log.Warn("could not make job.json durable", "err", err)
				}
				return
			}
			r.jobDirty = false
			r.jobMu.Unlock()
		}
	})
}
