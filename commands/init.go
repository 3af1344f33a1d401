package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
	"github.com/benchctl/benchctl/manifest/starter"
)

// InitOptions are benchctl init's flags.
type InitOptions struct {
	Dockerfile string
	Image      string // a prebuilt image instead of a Dockerfile
	Example    string // write a shipped example instead of a starter
	Dir        string // where --example writes
	Name       string
	Output     string
}

// Init writes a starter manifest for a Dockerfile or an image.
func Init(ctx context.Context, io iostreams.Streams, opts *InitOptions) error {
	if opts.Image != "" {
		return writeStarter(io, opts, "", starter.Options{Image: opts.Image}, refName(opts.Image))
	}
	df, err := filepath.Abs(opts.Dockerfile)
	if err != nil {
		return err
	}
	if st, err := os.Stat(df); err != nil || st.IsDir() {
		return exitcode.Usagef("point --dockerfile at your Dockerfile, or use a prebuilt image with --image REF", "no Dockerfile at %s", df)
	}
	so := starter.Options{}
	data, err := safefile.ReadFile(df, 16<<20)
	if err != nil {
		return exitcode.Usagef("point --dockerfile at a readable Dockerfile", "reading %s: %v", df, err)
	}
	if base, prog := image.FinalStage(data); strings.EqualFold(base, "scratch") {
		// No shell in the image: the command is the program the Dockerfile copies in.
		so.Command, so.CommandNote = []string{"/benchmark"}, "FROM scratch has no shell: the program itself; use the path your Dockerfile copies it to"
		if prog != "" {
			so.Command, so.CommandNote = []string{prog}, "the program the Dockerfile copies (FROM scratch has no shell); add its arguments"
		}
	}
	return writeStarter(io, opts, df, so, filepath.Base(filepath.Dir(df)))
}

// writeStarter writes the starter manifest: beside the Dockerfile df (or in the current
// folder without one) unless --file says where.
func writeStarter(io iostreams.Streams, opts *InitOptions, df string, so starter.Options, suggest string) error {
	out := opts.Output
	switch {
	case out == "" && df != "":
		out = filepath.Join(filepath.Dir(df), "benchmark.yaml")
	case out == "":
		out = "benchmark.yaml"
	}
	out, _ = filepath.Abs(out)
	if ext := strings.ToLower(filepath.Ext(out)); ext != ".yaml" && ext != ".yml" {
		return exitcode.Usagef("name it benchmark.yaml (or .yml)", "--file %s: the starter manifest is YAML (with comments); give a .yaml or .yml path", out)
	}
	if st, err := os.Stat(filepath.Dir(out)); err != nil || !st.IsDir() {
		return exitcode.Usagef("create the folder first, or pick another --file", "--file %s: the folder %s does not exist", out, filepath.Dir(out))
	}
	if df != "" {
		rel, err := filepath.Rel(filepath.Dir(out), df)
		if err != nil {
			return err
		}
		so.Dockerfile = filepath.ToSlash(rel)
	}
	so.Name, so.Schema = opts.Name, "./"+SchemaFileName
	if so.Name == "" {
		so.Name = manifest.SuggestName(suggest)
	}
	text, err := starter.Render(so)
	if err != nil {
		return exitcode.Usagef("choose another --name", "%v", err)
	}
	if so.Image != "" { // the one value not checked yet: the starter must validate as written
		if _, _, err := manifest.Parse(out, out, []byte(text), manifest.Options{}); err != nil {
			return exitcode.Usagef("give an image reference such as rocm/pytorch:6.4", "--image %q is not a valid image reference: %v", so.Image, err)
		}
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return exitcode.Usagef("remove it first or pick another path with --file", "%s already exists; benchctl init never overwrites", out)
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintln(io.Out(), out)
	if infoShown() {
		fmt.Fprintf(io.ErrOut(), "wrote %s; check it with: benchctl validate --manifest %s\n", out, out)
	}
	if p, err := writeSchemaBeside(out); err != nil {
		if slog.Default().Enabled(context.Background(), slog.LevelWarn) {
			fmt.Fprintf(io.ErrOut(), "warning: %v; for editor support, run: benchctl schema > %s\n", err, p)
		}
	} else if infoShown() {
		fmt.Fprintf(io.ErrOut(), "wrote %s, the manifest's JSON Schema: editors read it to complete and check the manifest\n", p)
	}
	return nil
}

// refName is the name an image reference suggests: its last path part, without tag or digest
// (rocm/pytorch:6.4 -> pytorch).
func refName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	ref = ref[strings.LastIndex(ref, "/")+1:]
	ref, _, _ = strings.Cut(ref, ":")
	return ref
}
