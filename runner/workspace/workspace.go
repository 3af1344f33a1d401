package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/internal/scripttree"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/manifest"
)

// A MAD model runs in a workspace of its node's own, one per run (a benchmark, or a trial
// of one): jobs/<id>/nodes/<node>/workspace/<run>/, mounted read-write at /myworkspace.
// The workspace holds a link for each entry of the checkout's top folder, leading to the
// checkout mounted read-only at CheckoutMount (so `../scripts/common/...` from the run
// directory reads the checkout, as under madengine), and the model's run directory, a
// copy of its script folder. What the model writes (beside itself, or moved to `../`)
// lands in the node's workspace, never in the checkout, which every node of a cluster
// shares: a file moved over one of the links replaces the link, not the checkout's file.

// CheckoutMount is where a MAD model's container sees the checkout, read-only.
const CheckoutMount = manifest.ReservedMountRoot + "/checkout"

// maxCheckoutEntries bounds the entries of a checkout's top folder that a workspace links
// to (MAD's has about a dozen).
const maxCheckoutEntries = 10_000

// maxKeptResult bounds a results file copied into the results folder from the workspace.
const maxKeptResult = 1 << 30

// In reports whether b is a MAD model, which runs in a workspace of its own.
func In(b manifest.Benchmark) bool { return b.Model != nil && b.Model.Catalog != "" }

// CheckoutOf is the checkout a MAD model comes from: its catalog's folder.
func CheckoutOf(b manifest.Benchmark) string { return filepath.Dir(b.Model.Catalog) }

// Mounts are a MAD model's mounts: the manifest's, less any at /myworkspace (the
// workspace's place), with the workspace and the checkout.
func Mounts(b manifest.Benchmark, mounts []manifest.Mount, ws string) []manifest.Mount {
	out := make([]manifest.Mount, 0, len(mounts)+2)
	for _, m := range mounts {
		if path.Clean(m.Target) != manifest.ModelWorkspace {
			out = append(out, m)
		}
	}
	return append(out, manifest.Mount{Source: ws, Target: manifest.ModelWorkspace},
		manifest.Mount{Source: CheckoutOf(b), Target: CheckoutMount, ReadOnly: true})
}

// runDirName is the name of a MAD model's run directory in its workspace: its url's clone,
// madengine's run_directory for a script of the checkout, "" for a program of the image.
func runDirName(b manifest.Benchmark) string {
	switch {
	case b.Model.URL != "":
		return manifest.CloneName(b.Model.URL)
	case b.Model.RunDir != "":
		return manifest.ModelRunDirectory
	}
	return ""
}

// Error is a workspace that could not be made: the run fails with it.
type Error struct {
	Run string
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("making the workspace of %s: %v", e.Run, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Make makes the workspace of run (a benchmark's or a trial's run name) afresh in
// the node folder, with mode (resultsMode: the container's user must write in it): the
// links to the checkout's entries and the run directory, a copy of the model's script
// folder (scripttree: checked again here, as the checkout may have changed since it was
// loaded). A model with a url runs in a copy of the job's clone of it (clones: the job
// folder's ClonesFolder, which rank 0 filled before any container started) instead, its
// script folder copied over it, as madengine copies it into its clone. The links point
// into the checkout as the model sees it: at CheckoutMount in a container, or (process,
// for the process runtime, which mounts nothing) at the checkout's own path. It returns the
// workspace's host path.
func Make(ctx context.Context, nf *jobdir.NodeFolder, nd jobdir.NodeDir, clones, run string, b manifest.Benchmark, mode os.FileMode, process bool) (string, error) {
	ws := nd.Workspace(run)
	if err := os.RemoveAll(ws); err != nil { // an earlier run's of this name (never followed: RemoveAll removes links)
		return "", err
	}
	d, err := nf.MkdirAll(jobdir.WorkspaceRel(run), 0o755)
	if err != nil {
		return "", err
	}
	err = d.Chmod(mode)
	d.Close()
	if err != nil {
		return "", err
	}
	checkout := CheckoutOf(b)
	top, err := os.Open(checkout)
	if err != nil {
		return "", fmt.Errorf("the checkout %s: %w", checkout, err)
	}
	names, err := top.Readdirnames(maxCheckoutEntries + 1)
	top.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("the checkout %s: %w", checkout, err)
	}
	if len(names) > maxCheckoutEntries {
		return "", fmt.Errorf("the checkout %s holds more than %d entries in its top folder: the workspace links to each; keep a MAD checkout's top folder small", checkout, maxCheckoutEntries)
	}
	rdName := runDirName(b)
	linkRoot := CheckoutMount
	if process {
		if linkRoot, err = filepath.Abs(checkout); err != nil {
			return "", err
		}
	}
	for _, name := range names {
		if name == manifest.ModelRunDirectory || name == rdName { // madengine's own, from an earlier run in the checkout
			continue
		}
		if err := os.Symlink(path.Join(linkRoot, name), filepath.Join(ws, name)); err != nil {
			return "", err
		}
	}
	if rdName == "" {
		return ws, nil
	}
	rd := filepath.Join(ws, rdName)
	if err := os.Mkdir(rd, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(rd, mode); err != nil {
		return "", err
	}
	if b.Model.URL != "" {
		clone := filepath.Join(clones, manifest.CloneKey(b.Model.URL))
		if _, err := scripttree.CopyExcept(ctx, clone, clone, rd, scripttree.DefaultLimits, ".git"); err != nil {
			return "", fmt.Errorf("copying the job's clone of %s: %w", manifest.RedactURL(b.Model.URL), err)
		}
	}
	if b.Model.RunDir == "" {
		return ws, nil
	}
	src := filepath.Join(checkout, filepath.FromSlash(b.Model.RunDir))
	if _, err := scripttree.Copy(ctx, checkout, src, rd, scripttree.DefaultLimits); err != nil {
		return "", fmt.Errorf("copying the model's scripts %s into its run directory: %w", b.Model.RunDir, err)
	}
	return ws, nil
}

// KeepResults looks for a MAD model's results file where madengine looks when the model
// did not write it under $BENCHCTL_OUTPUT_DIR: the workspace's top (a helper's `mv
// perf_x.csv ../`), then the run directory (a CSV left in the working folder), the run
// directory also where the tools' script moved it (resultsDir/run_directory). What it
// finds is copied to resultsDir, under the results file's name. A link is never followed
// out of the folder it is in, and a FIFO or a device is not read (OpenBeneath). It
// returns where it found the file ("" when it was written in the results folder, or is
// nowhere) and the reasons it passed over what it could not read.
func KeepResults(b manifest.Benchmark, resultsDir, ws string) (string, []string, error) {
	if b.Results == "" || ws == "" {
		return "", nil, nil
	}
	rel := filepath.FromSlash(b.Results)
	if _, err := os.Lstat(filepath.Join(resultsDir, rel)); err == nil {
		return "", nil, nil
	}
	var passed []string
	dirs := []string{ws}
	if rd := runDirName(b); rd != "" {
		dirs = append(dirs, filepath.Join(ws, rd), filepath.Join(resultsDir, manifest.ModelRunDirectory))
	}
	for _, dir := range dirs {
		f, err := openBeneathFollowing(dir, rel)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			passed = append(passed, err.Error())
			continue
		}
		from := filepath.Join(dir, rel)
		err = copyResult(f, resultsDir, rel)
		f.Close()
		return from, passed, err
	}
	return "", passed, nil
}

// openBeneathFollowing opens rel inside dir as safefile.OpenBeneath does, and when rel
// itself is a link (a model's `ln -s real.csv perf.csv`), what it leads to, if that is
// inside dir too.
func openBeneathFollowing(dir, rel string) (*os.File, error) {
	f, err := safefile.OpenBeneath(dir, rel)
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) {
		return f, err
	}
	if st, lerr := os.Lstat(filepath.Join(dir, rel)); lerr != nil || st.Mode()&fs.ModeSymlink == 0 {
		return nil, err
	}
	real, rerr := filepath.EvalSymlinks(filepath.Join(dir, rel))
	rdir, derr := filepath.EvalSymlinks(dir)
	if rerr != nil || derr != nil {
		return nil, err
	}
	to, terr := filepath.Rel(rdir, real)
	if terr != nil || !filepath.IsLocal(to) {
		return nil, fmt.Errorf("%s is a link out of %s: not followed", filepath.Join(dir, rel), dir)
	}
	return safefile.OpenBeneath(rdir, to) // still opened beneath: a link swapped in since is refused
}

// copyResult copies f to rel in the results folder, making its folders there one at a
// time (none of them a link) and the file anew (never written through a link).
func copyResult(f *os.File, resultsDir, rel string) error {
	cur, err := safefile.OpenDir(resultsDir)
	if err != nil {
		return err
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, p := range parts[:len(parts)-1] {
		next, _, err := safefile.MkdirAt(cur, p, 0o755)
		cur.Close()
		if err != nil {
			return err
		}
		cur = next
	}
	defer cur.Close()
	out, err := safefile.CreateNewAt(cur, parts[len(parts)-1], 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(f, maxKeptResult+1))
	if err == nil && n > maxKeptResult {
		err = fmt.Errorf("%s is larger than %d GiB: not a results CSV", f.Name(), maxKeptResult>>30)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = safefile.RemoveAt(cur, parts[len(parts)-1])
	}
	return err
}
