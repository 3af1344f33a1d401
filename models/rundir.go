package models

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/internal/scripttree"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/document"
)

// A MAD model runs as madengine runs it (execution/container_runner.py): its script's
// folder is copied into the model's run directory, and the model runs from there, so that
// run.sh's relative helpers (./x_report.sh), files it writes beside itself and `../` (the
// workspace) are what they are under madengine. `scripts` names
//
//	a .sh file    -> its folder is copied, and `bash <file> ARGS` runs in the copy
//	a .py file    -> its folder is copied, and `python3 <file> ARGS` runs in the copy
//	a folder      -> the folder is copied, and `bash run.sh ARGS` runs in the copy
//	/an/absolute  -> a program in the image, run as it is from the workspace (no copy)
//
// each relative to the checkout. The run directory is RunDirectory under Workspace, a
// workspace of the node's own (the runner makes it): nothing is ever written into the
// checkout, which every node of a cluster shares.

// RunDirectory is the name of a model's run directory in its workspace
// (manifest.ModelRunDirectory).
const RunDirectory = manifest.ModelRunDirectory

// ScriptForm is how a model's scripts run: Dir is the folder copied into the run
// directory (slash-separated, relative to the checkout; "" for a program in the image)
// and Command the words run there, before the model's args.
type ScriptForm struct {
	Dir     string
	Command []string
}

// Form reads a scripts value as madengine does. A relative path that leaves the checkout
// is an error.
func Form(scripts string) (ScriptForm, error) {
	s := strings.TrimSpace(scripts)
	if s == "" {
		return ScriptForm{}, fmt.Errorf("scripts is empty: give the script (run.sh, x.py) or folder the model runs")
	}
	if path.IsAbs(s) { // a program of the image (benchctl's examples: /dummy)
		return ScriptForm{Command: []string{s}}, nil
	}
	clean := path.Clean(s)
	if !filepath.IsLocal(filepath.FromSlash(clean)) {
		return ScriptForm{}, fmt.Errorf("scripts %s leads out of the checkout: give a path inside it (scripts/<dir>/run.sh), or an absolute path for a program in the image", document.Quote(scripts))
	}
	switch {
	case strings.HasSuffix(clean, ".sh"):
		return ScriptForm{Dir: path.Dir(clean), Command: []string{"bash", path.Base(clean)}}, nil
	case strings.HasSuffix(clean, ".py"):
		return ScriptForm{Dir: path.Dir(clean), Command: []string{"python3", path.Base(clean)}}, nil
	}
	return ScriptForm{Dir: clean, Command: []string{"bash", "run.sh"}}, nil
}

// CheckScripts checks a model's script folder in the checkout: the folder is one benchctl
// copies (scripttree: no link out of the checkout, no FIFO or device, within
// scripttree.DefaultLimits), else an error. A folder or script that is not there is a
// warning (the returned text): madengine finds out when the model runs, and so does
// benchctl, whose run then fails saying so.
func CheckScripts(ctx context.Context, checkout string, m Model) (string, error) {
	f, err := Form(m.Scripts)
	if err != nil || f.Dir == "" {
		return "", err
	}
	dir := filepath.Join(checkout, filepath.FromSlash(f.Dir))
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("scripts %s: the folder %s is not in the checkout: the model will fail when it runs", document.Quote(m.Scripts), document.Quote(f.Dir)), nil
	} else if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("scripts %s: the folder %s cannot be read: %v", document.Quote(m.Scripts), document.Quote(f.Dir), err)
	}
	if err := scripttree.Check(ctx, checkout, dir, scripttree.DefaultLimits); err != nil {
		return "", fmt.Errorf("scripts %s: %w", document.Quote(m.Scripts), err)
	}
	script := filepath.Join(dir, f.Command[1])
	if st, err := os.Stat(script); err != nil || !st.Mode().IsRegular() {
		what := "is not in the checkout"
		if err == nil {
			what = "is not a file"
		}
		return fmt.Sprintf("scripts %s: %s %s (madengine runs %s %s in a copy of %s): the model will fail when it runs", document.Quote(m.Scripts), document.Quote(script), what, f.Command[0], document.Quote(f.Command[1]), document.Quote(f.Dir)), nil
	}
	return "", nil
}
