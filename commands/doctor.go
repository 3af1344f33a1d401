package commands

import (
	"context"
	"fmt"
	"os"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/jsonout"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/runner/doctor"
)

// DoctorOptions are benchctl doctor's flags.
type DoctorOptions struct {
	Manifest  string
	SharedDir string
	Output    string
	Engine    string
}

// doctorReport is doctor -o json: this node's checks, named by its host.
type doctorReport struct {
	Host   string         `json:"host"`
	OK     bool           `json:"ok"` // every check passed
	Checks []doctor.Check `json:"checks"`
}

// doctorFailed makes doctor exit 1 when a check failed.
type doctorFailed struct{ n int }

func (e *doctorFailed) Error() string { return fmt.Sprintf("%d checks failed", e.n) }

func (e *doctorFailed) ExitCode() int { return 1 }

// Doctor checks what a node needs to run benchmarks and prints each check.
func Doctor(ctx context.Context, io iostreams.Streams, opts *DoctorOptions) error {
	var m *manifest.Manifest
	if opts.Manifest != "" {
		var err error
		if m, err = loadManifest(opts.Manifest); err != nil {
			return err
		}
	}
	dir, err := SharedDir(opts.SharedDir)
	if err != nil {
		return err
	}
	kind := engineKind(opts.Engine, m)
	node, nerr := detectNode(os.LookupEnv)
	checks := doctor.Run(ctx, doctor.Options{Node: node, NodeErr: nerr, SharedDir: dir, Manifest: m, Lookup: os.LookupEnv, EngineKind: kind,
		Engine: func() (doctor.Engine, error) { return connectDoctorEngine(kind) }, Version: CurrentBuild().Version})
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	host, _ := os.Hostname()
	if opts.Output == "json" {
		// One document per node, naming it; under srun with several tasks, one line each
		// (their stdout reaches the user interleaved line by line).
		doc := doctorReport{Host: host, OK: failed == 0, Checks: checks}
		if severalNodesPrint(os.LookupEnv) {
			if err := jsonout.Line(io.Out(), doc); err != nil {
				return err
			}
		} else if err := writeJSON(io.Out(), doc); err != nil {
			return err
		}
	} else {
		for _, c := range checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			// Detail can quote what other nodes wrote into the shared .doctor folder.
			fmt.Fprintf(io.Out(), "%s  %s  %s: %s\n", host, mark, c.Name, textsafe.Line(c.Detail))
			if c.Fix != "" {
				fmt.Fprintf(io.Out(), "%s        fix: %s\n", host, textsafe.Line(c.Fix))
			}
		}
	}
	if failed > 0 {
		return &doctorFailed{n: failed}
	}
	return nil
}

// connectDoctorEngine is the engine client as doctor's engine (nil, not a nil client, on error).
func connectDoctorEngine(kind string) (doctor.Engine, error) {
	c, err := image.ConnectKind(kind)
	if err != nil {
		return nil, err
	}
	return c, nil
}
