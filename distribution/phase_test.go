package distribution

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// fakeEngine has the images of ids (by id or ref); every other call of the image phase
// fails, so that a test sees what it did not expect.
type fakeEngine struct {
	image.Engine
	ids map[string]string // ref or id -> id
}

func (e *fakeEngine) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (client.ImageInspectResult, error) {
	if id, ok := e.ids[ref]; ok {
		var res client.ImageInspectResult
		res.ID = id
		return res, nil
	}
	return client.ImageInspectResult{}, cerrdefs.ErrNotFound.WithMessage("no such image: " + ref)
}

// fakeLeader is rank 0's job channel: failing at the phase failAt, and recording aborts.
type fakeLeader struct {
	mu       sync.Mutex
	failAt   string
	gathered map[string]string // what the workers say at a gather
	released []string
	aborts   []string
	codes    []int
}

func (b *fakeLeader) Release(_ context.Context, phase string, _ map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if phase == b.failAt {
		return fmt.Errorf("job channel: rank 1 lost at %s", phase)
	}
	b.released = append(b.released, phase)
	return nil
}

func (b *fakeLeader) Gather(_ context.Context, phase string) (map[string]string, error) {
	if phase == b.failAt {
		return nil, fmt.Errorf("job channel: rank 1 lost at %s", phase)
	}
	return b.gathered, nil
}

func (b *fakeLeader) Abort(reason string, code int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.aborts, b.codes = append(b.aborts, reason), append(b.codes, code)
}

func (b *fakeLeader) Aborted() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.aborts) == 0 {
		return "", false
	}
	return b.aborts[0], true
}

// fakeWorker is a worker's job channel: rank 0 releases data at each phase, or fails it.
type fakeWorker struct {
	release map[string]map[string]string
	failAt  string
	waited  []string
}

func (b *fakeWorker) Wait(ctx context.Context, phase string) (map[string]string, error) {
	return b.WaitWith(ctx, phase, nil)
}

func (b *fakeWorker) WaitWith(_ context.Context, phase string, _ map[string]string) (map[string]string, error) {
	b.waited = append(b.waited, phase)
	if phase == b.failAt {
		return nil, fmt.Errorf("job channel: rank 0 lost at %s", phase)
	}
	return b.release[phase], nil
}

// fakeReporter records what the image phase reported.
type fakeReporter struct {
	fails     []error
	codes     []int
	job, node [][]Image
}

func (r *fakeReporter) Fail(err error, code int) {
	r.fails, r.codes = append(r.fails, err), append(r.codes, code)
}
func (r *fakeReporter) JobImages(list []Image)  { r.job = append(r.job, list) }
func (r *fakeReporter) NodeImages(list []Image) { r.node = append(r.node, list) }

var (
	_ LeaderBarrier = (*fakeLeader)(nil)
	_ WorkerBarrier = (*fakeWorker)(nil)
	_ Reporter      = (*fakeReporter)(nil)
)

// phaseOptions is rank of a job of world nodes under Slurm, whose benchmarks run on img.
func phaseOptions(t *testing.T, rank, world int, dist string, imgs ...manifest.Image) Options {
	t.Helper()
	m := &manifest.Manifest{Name: "m", Image: imgs[0], Distribution: dist}
	for i, img := range imgs {
		b := manifest.Benchmark{Name: fmt.Sprintf("b%d", i)}
		if i > 0 {
			b.Image = &img
		}
		m.Benchmarks = append(m.Benchmarks, b)
	}
	hosts := make([]string, world)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("h%d", i)
	}
	shared := t.TempDir()
	return Options{Manifest: m, Benchmarks: m.Benchmarks, SharedDir: shared, Dir: jobdir.Layout{Shared: shared}.Job("77", 0),
		Node: Node{JobID: "77", Rank: rank, World: world, Hosts: hosts, Source: jobdir.SourceSlurm},
		Log:  slog.New(slog.NewTextHandler(io.Discard, nil))}
}

const idA = "sha256:aaaa"

// One node: rank 0 finds the image on its engine, records it, and runs it by id; no job
// channel, nothing reported as failed.
func TestLeadOneNode(t *testing.T) {
	o := phaseOptions(t, 0, 1, "", manifest.Image{Ref: "busybox:1"})
	rep := &fakeReporter{}
	imgs, err := Lead(context.Background(), o, &fakeEngine{ids: map[string]string{"busybox:1": idA}}, nil, rep)
	if err != nil {
		t.Fatal(err)
	}
	if got := imgs.For("b0"); got.RunRef() != idA || got.Ref != "busybox:1" || got.Via != "" {
		t.Errorf("image %+v", got)
	}
	if len(rep.fails) != 0 || len(rep.job) != 1 || len(rep.node) != 1 || rep.node[0][0].ID != idA {
		t.Errorf("reported %+v", rep)
	}
}

// The job channel fails at each of rank 0's phases in turn: the phase ends with its error,
// the job is aborted once (not again when the channel aborted it already), and nothing is
// said to be ready.
func TestLeadBarrierFailsMidPhase(t *testing.T) {
	for _, phase := range []string{"joined", "image", "have", "ready"} {
		o := phaseOptions(t, 0, 3, manifest.DistributionStream, manifest.Image{Ref: "busybox:1"})
		b := &fakeLeader{failAt: phase, gathered: map[string]string{"have.1": "0", "have.2": "0"}}
		rep := &fakeReporter{}
		_, err := Lead(context.Background(), o, &fakeEngine{ids: map[string]string{"busybox:1": idA}}, b, rep)
		if err == nil || !strings.Contains(err.Error(), "rank 1 lost at "+phase) {
			t.Fatalf("%s: %v", phase, err)
		}
		if len(b.aborts) != 1 || b.codes[0] != exitcode.Failure || !strings.Contains(b.aborts[0], "rank 1 lost at "+phase) {
			t.Errorf("%s: aborts %q %v", phase, b.aborts, b.codes)
		}
		if len(rep.node) != 0 && phase != "ready" {
			t.Errorf("%s: said ready: %+v", phase, rep.node)
		}
		if len(rep.fails) != 0 {
			t.Errorf("%s: the job channel's failure reported again: %v", phase, rep.fails)
		}
	}
	// Every worker has the image: nothing is streamed, and job.json says so.
	o := phaseOptions(t, 0, 3, manifest.DistributionStream, manifest.Image{Ref: "busybox:1"})
	b := &fakeLeader{gathered: map[string]string{"have.1": "0", "have.2": "0"}}
	rep := &fakeReporter{}
	imgs, err := Lead(context.Background(), o, &fakeEngine{ids: map[string]string{"busybox:1": idA}}, b, rep)
	if err != nil || imgs.For("b0").Via != ViaPresent || len(rep.job) != 2 || rep.job[1][0].Via != ViaPresent {
		t.Fatalf("%v %+v %+v", err, imgs, rep.job)
	}
	if strings.Join(b.released, ",") != "joined,image,have,ready" {
		t.Errorf("phases %v", b.released)
	}
}

// A worker whose release cannot be read (another benchctl, another manifest, a cut or
// hostile value) reports the failure to the job, says what is wrong, and never waits at
// "ready".
func TestFollowMalformedRelease(t *testing.T) {
	good := `{"ref":"busybox:1","id":"` + idA + `","via":"ref"}`
	for _, c := range []struct {
		name string
		data map[string]string
		want string
	}{
		{"none", nil, `rank 0 released "" images for 1`},
		{"more", map[string]string{"images": "2", "image.0": good, "image.1": good}, `rank 0 released "2" images for 1`},
		{"huge", map[string]string{"images": "2000000000"}, `rank 0 released "2000000000" images for 1`},
		{"negative", map[string]string{"images": "-1"}, `rank 0 released "-1" images for 1`},
		{"not json", map[string]string{"images": "1", "image.0": "{" + strings.Repeat("x", 6000)}, "image 0 cannot be read"},
		{"no id", map[string]string{"images": "1", "image.0": `{"ref":"busybox:1"}`}, "image 0 cannot be read"},
		{"lost", map[string]string{"images": "1"}, "image 0 cannot be read"},
	} {
		o := phaseOptions(t, 1, 3, "", manifest.Image{Ref: "busybox:1"})
		b := &fakeWorker{release: map[string]map[string]string{"image": c.data}}
		rep := &fakeReporter{}
		_, err := Follow(context.Background(), o, &fakeEngine{ids: map[string]string{idA: idA}}, b, rep)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
		if len(rep.fails) != 1 || rep.fails[0] != err || rep.codes[0] != exitcode.Failure {
			t.Errorf("%s: reported %v %v", c.name, rep.fails, rep.codes)
		}
		if strings.Join(b.waited, ",") != "joined,image" || len(rep.node) != 0 {
			t.Errorf("%s: waited at %v, ready %v", c.name, b.waited, rep.node)
		}
	}
	// A readable release: the image is this engine's already; the worker is ready.
	o := phaseOptions(t, 1, 3, "", manifest.Image{Ref: "busybox:1"})
	b := &fakeWorker{release: map[string]map[string]string{"image": {"images": "1", "image.0": good}}}
	rep := &fakeReporter{}
	imgs, err := Follow(context.Background(), o, &fakeEngine{ids: map[string]string{idA: idA}}, b, rep)
	if err != nil || imgs.For("b0").RunRef() != idA || len(rep.fails) != 0 || len(rep.node) != 1 || strings.Join(b.waited, ",") != "joined,image,ready" {
		t.Fatalf("%v %+v %v", err, rep, b.waited)
	}
}

// A worker's job channel that fails mid-phase: the error is the channel's verdict, which
// the job has; the worker does not report it again, nor go on to the next phase.
func TestFollowBarrierFailsMidPhase(t *testing.T) {
	good := `{"ref":"busybox:1","id":"` + idA + `","via":"ref"}`
	for _, phase := range []string{"joined", "image", "ready"} {
		o := phaseOptions(t, 1, 3, "", manifest.Image{Ref: "busybox:1"})
		b := &fakeWorker{failAt: phase, release: map[string]map[string]string{"image": {"images": "1", "image.0": good}}}
		rep := &fakeReporter{}
		_, err := Follow(context.Background(), o, &fakeEngine{ids: map[string]string{idA: idA}}, b, rep)
		if err == nil || !strings.Contains(err.Error(), "rank 0 lost at "+phase) || len(rep.fails) != 0 || b.waited[len(b.waited)-1] != phase {
			t.Errorf("%s: %v, reported %v, waited %v", phase, err, rep.fails, b.waited)
		}
	}
}

// A worker that cannot get an image reports it, naming the image and its benchmarks in a
// job of several images.
func TestFollowImageMissingIsReported(t *testing.T) {
	o := phaseOptions(t, 1, 2, "", manifest.Image{Ref: "busybox:1"}, manifest.Image{Ref: "alpine:3", Pull: image.PullNever})
	rel := map[string]string{"images": "2", "image.0": `{"ref":"busybox:1","id":"` + idA + `","via":"ref"}`,
		"image.1": `{"ref":"alpine:3","id":"sha256:bbbb","via":"ref"}`}
	rep := &fakeReporter{}
	_, err := Follow(context.Background(), o, &fakeEngine{ids: map[string]string{idA: idA}}, &fakeWorker{release: map[string]map[string]string{"image": rel}}, rep)
	if err == nil || !strings.HasPrefix(err.Error(), "image alpine:3 (benchmarks b1): image alpine:3 is not on this node's engine") {
		t.Fatalf("%v", err)
	}
	if len(rep.fails) != 1 || rep.codes[0] != exitcode.Failure || len(rep.node) != 0 {
		t.Errorf("reported %v %v", rep.fails, rep.codes)
	}
}

// More images than one release holds is bad input, on every rank alike: the job hears it
// with exit code 4.
func TestTooManyImagesIsBadInput(t *testing.T) {
	imgs := make([]manifest.Image, MaxImages+1)
	for i := range imgs {
		imgs[i] = manifest.Image{Ref: fmt.Sprintf("img%d:1", i)}
	}
	for rank := range 2 {
		o := phaseOptions(t, rank, 2, "", imgs...)
		rep := &fakeReporter{}
		var err error
		if rank == 0 {
			_, err = Lead(context.Background(), o, &fakeEngine{}, &fakeLeader{}, rep)
		} else {
			_, err = Follow(context.Background(), o, &fakeEngine{}, &fakeWorker{}, rep)
		}
		if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "run on 61 images; one job runs at most 60") {
			t.Errorf("rank %d: %v", rank, err)
		}
		if len(rep.fails) != 1 || rep.codes[0] != exitcode.Invalid {
			t.Errorf("rank %d: reported %v %v", rank, rep.fails, rep.codes)
		}
	}
}

// Rank 0's failure to get an image is told to the job with the error's own exit code: a
// build record that pins none of the job's images is bad input (4) on every rank, as it is
// on rank 0, not a plain failure (1).
func TestLeadFailureCarriesItsExitCode(t *testing.T) {
	dir := t.TempDir()
	var imgs []manifest.Image
	for _, f := range []string{"a.Dockerfile", "b.Dockerfile"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("FROM scratch\nLABEL f="+f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, manifest.Image{Dockerfile: filepath.Join(dir, f), Context: dir})
	}
	o := phaseOptions(t, 0, 2, "", imgs...)
	o.Records = []*image.Record{{Version: 1, Key: strings.Repeat("c", 64), Dockerfile: "other.Dockerfile"}}
	rep := &fakeReporter{}
	b := &fakeLeader{}
	_, err := Lead(context.Background(), o, &fakeEngine{}, b, rep)
	var ie *InputError
	if !errors.As(err, &ie) || ie.Var != "--record" {
		t.Fatalf("%v", err)
	}
	if len(rep.fails) != 1 || rep.codes[0] != exitcode.Invalid {
		t.Errorf("reported %v with codes %v, want exit code %d", rep.fails, rep.codes, exitcode.Invalid)
	}
	if len(b.released) != 0 {
		t.Errorf("released %v", b.released)
	}
}
