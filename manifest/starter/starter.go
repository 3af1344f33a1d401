// Package starter renders the commented starter manifest `benchctl init` writes: one that
// validates as written, with the fields a new user edits first.
package starter

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"text/template"

	"github.com/benchctl/benchctl/manifest"
)

// Options fill the starter manifest.
type Options struct {
	Name       string // manifest name; must be valid
	Dockerfile string // path relative to the manifest's folder; or:
	Image      string // a prebuilt image's reference (image.ref), when there is no Dockerfile
	// Command is the benchmark's command (exec form); empty: a shell one-liner, which needs
	// an image with sh. CommandNote is the comment written after it.
	Command     []string
	CommandNote string
	// Schema, when set, is the manifest schema's path or URL for editors: the first line is
	// then `# yaml-language-server: $schema=<Schema>`.
	Schema string
}

// starterTmpl is parsed when first used, not at every start of benchctl.
var starterTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("starter").Funcs(template.FuncMap{"q": func(s string) string { return fmt.Sprintf("%q", s) },
		"list": func(l []string) string {
			q := make([]string, len(l))
			for i, s := range l {
				q[i] = fmt.Sprintf("%q", s)
			}
			return "[" + strings.Join(q, ", ") + "]"
		}}).Parse(`{{with .Schema}}# yaml-language-server: $schema={{.}}
{{end}}# benchctl manifest — see docs/manifest.md for every field. Check it with:
#   benchctl validate --manifest <this file>
name: {{q .Name}}                   # lower-case letters, digits, '.', '_', '-'

image:
{{- if .Image}}
  ref: {{q .Image}}          # a prebuilt image; rank 0 pulls it when the engine lacks it
  # pull: missing                    # missing | always | never
{{- else}}
  dockerfile: {{q .Dockerfile}}      # relative to this file; the build context is its folder
  # context: .                       # another build context folder
  # target: run                      # a build stage
  # buildArgs: {BASE_IMAGE: "rocm/pytorch:6.4", CACHE_BUST: "${BUILD_NUMBER:-0}"}
{{- end}}

gpu:
  vendor: auto                       # amd | nvidia | none | auto (what the node has)
  count: all                         # GPUs per node: a number or all

# mounts: ["/data:/data:ro"]         # host:container[:ro]; relative hosts are relative to this file
# env: {HF_HOME: /data/hf}
# passEnv: [NCCL_*]                  # host variables copied into the container
# secrets: [HF_TOKEN]                # passed at run time only, never stored

container:
  network: host                      # multi-node benchmarks need host
  ipc: host
  # shmSize: 16g

benchmarks:
  - name: main
    command: {{list .Command}}   # {{.CommandNote}}
    timeout: 2h
    # results: perf.csv              # a CSV your program writes to $BENCHCTL_OUTPUT_DIR

# slurm: {nodes: 2, partition: gpu, time: "02:00:00"}   # defaults for benchctl submit
`))
})

// Render renders a commented starter manifest that validates as written.
func Render(o Options) (string, error) {
	var b bytes.Buffer
	if !manifest.ValidName(o.Name) {
		return "", fmt.Errorf("%q is not a valid manifest name (lower-case letters, digits, '.', '_', '-')", o.Name)
	}
	o.Dockerfile = strings.ReplaceAll(o.Dockerfile, "$", "$$") // a path, not a ${VAR} reference
	o.Image = strings.ReplaceAll(o.Image, "$", "$$")
	if len(o.Command) == 0 {
		o.Command = []string{"sh", "-c", "echo performance: 1 samples_per_second"}
		o.CommandNote = "exec form: a list; this one needs a shell in the image"
	}
	if o.CommandNote == "" {
		o.CommandNote = "exec form: a list"
	}
	err := starterTmpl().Execute(&b, o)
	return b.String(), err
}
