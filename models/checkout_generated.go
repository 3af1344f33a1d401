package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/benchctl/benchctl/internal/procgroup"
	"github.com/benchctl/benchctl/internal/textsafe"
	"github.com/benchctl/benchctl/manifest"
)

// A scripts/<dir>/get_models_json.py defines list_models(), which returns madengine
// CustomModel objects (madengine.utils.discover_models). benchctl runs it the way
// madengine does (imports the file and calls list_models, then each model's
// update_model), in a python3 of its own: no shell, the checkout as the working folder, the
// file's path as an argument, bounded in time and in output. The driver prints the
// entries as a JSON list, which is then read like any models.json, so every check of a
// catalog applies to what the script made.
//
// Only that file is the checkout's code that runs: the driver drops the working folder
// from sys.path before it imports anything (python3 -c puts it first, where a checkout's
// json.py would shadow the standard library) and appends the script's own folder, so the
// script imports what sits beside it as when python3 runs the file. The script runs in a
// process group of its own, killed whole at the timeout, and with an environment of
// generatorEnv's names only (no BENCHCTL_* job secret, no MAD_SECRETS_*, nothing
// credential-like). One process runs a generator once (generatorCache).

// GeneratorTimeout bounds one get_models_json.py run.
const GeneratorTimeout = 2 * time.Minute

// MaxGeneratedSize bounds what one get_models_json.py run may print.
const MaxGeneratedSize = 16 << 20

// generatorDriver is the python3 program that runs a get_models_json.py (sys.argv[1]).
// Without madengine installed it stands in madengine's CustomModel (the same fields and
// defaults). What the script prints goes to stderr; stdout holds only the JSON. Empty
// fields are left out, so that a generated entry reads like a written one.
const generatorDriver = `
import sys
if sys.path and sys.path[0] in ("", "."):
    del sys.path[0]
import dataclasses, importlib.util, json, os, types, typing
sys.path.append(os.path.dirname(os.path.abspath(sys.argv[1])))
try:
    from madengine.utils.discover_models import CustomModel
except Exception:
    @dataclasses.dataclass
    class CustomModel:
        name: str
        dockerfile: str = ""
        dockercontext: str = ""
        scripts: str = ""
        url: str = ""
        cred: str = ""
        owner: str = ""
        data: str = ""
        n_gpus: str = "-1"
        timeout: int = 7200
        training_precision: str = ""
        tags: typing.List[str] = dataclasses.field(default_factory=list)
        args: str = ""
        multiple_results: str = ""
        skip_gpu_arch: str = ""
        def to_dict(self):
            return dataclasses.asdict(self)
        def update_model(self):
            pass
    for n in ("madengine", "madengine.utils", "madengine.utils.discover_models"):
        sys.modules[n] = types.ModuleType(n)
    sys.modules["madengine.utils.discover_models"].CustomModel = CustomModel
out, sys.stdout = sys.stdout, sys.stderr
spec = importlib.util.spec_from_file_location("get_models_json", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
if not hasattr(mod, "list_models"):
    sys.exit("get_models_json.py defines no list_models function")
res = []
for m in mod.list_models():
    if not isinstance(m, CustomModel):
        sys.exit("list_models returned a %s, not a CustomModel (madengine.utils.discover_models)" % type(m).__name__)
    m.update_model()
    res.append({k: v for k, v in m.to_dict().items() if v not in ("", None) or k == "name"})
json.dump(res, out)
`

// limitedBuffer keeps up to max bytes and notes that more came.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.over = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last max bytes written (a traceback ends what a script writes).
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if drop := len(b.buf) + len(p) - b.max; drop > 0 {
		b.buf = append(b.buf[:0], b.buf[drop:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// errGeneratorTimeout is the cause of a generator's context when its own timeout ends it
// (not its caller's deadline).
var errGeneratorTimeout = errors.New("get_models_json.py timed out")

// generatedCatalog runs the get_models_json.py gen of the checkout root and reads what it
// printed as a catalog named "<gen> (its list_models)".
func generatedCatalog(ctx context.Context, root, gen string, timeout time.Duration) (*Catalog, error) {
	label := gen + " (its list_models)"
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errGeneratorTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c", generatorDriver, gen)
	cmd.Dir = root
	cmd.Env = generatorEnv(os.Environ())
	procgroup.Own(cmd)              // its children go with it
	cmd.WaitDelay = 5 * time.Second // a child that keeps the pipes open does not hold us
	out := &limitedBuffer{max: MaxGeneratedSize}
	errOut := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errGeneratorTimeout):
		return nil, catalogError(gen, 0, fmt.Sprintf("did not finish within %s; what it printed last: %s", timeout, lastLine(errOut)))
	case ctx.Err() != nil:
		return nil, fmt.Errorf("running %s: %w", gen, context.Cause(ctx))
	case errors.Is(err, exec.ErrNotFound):
		return nil, catalogError(gen, 0, "needs python3, which is not on PATH here: install it, or move the models into scripts/<dir>/models.json")
	case err != nil:
		return nil, catalogError(gen, 0, fmt.Sprintf("failed (%v): %s", err, lastLine(errOut)))
	case out.over:
		return nil, catalogError(gen, 0, fmt.Sprintf("printed more than %d MiB of models", MaxGeneratedSize>>20))
	}
	c, err := parseCatalog(ctx, label, out.buf.Bytes())
	if err != nil {
		return nil, err
	}
	return c, nil
}

// lastLine is the last line a script wrote to stderr, made safe to print.
func lastLine(b *tailBuffer) string {
	s := strings.TrimSpace(string(b.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(nothing)"
	}
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return textsafe.Line(s)
}

// generatorEnv is the environment a get_models_json.py gets: of env, only the names a
// Python program and madengine's generators plausibly need (PATH, HOME, USER, LOGNAME,
// SHELL, TMPDIR, TZ, LANG, LANGUAGE, LC_*, PYTHON*, VIRTUAL_ENV, CONDA_*, LD_LIBRARY_PATH,
// the proxy and CA settings, ROCM_PATH, HIP_PATH, CUDA_HOME, CUDA_PATH and MAD_* but
// MAD_SECRETS_*), and none of them credential-like (manifest.CredentialLike): never
// BENCHCTL_JOB_SECRET or another BENCHCTL_* value, which a job's nodes hold.
func generatorEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if ok && generatorVar(k) {
			out = append(out, kv)
		}
	}
	return out
}

// generatorVar says whether the variable k reaches a get_models_json.py (generatorEnv).
func generatorVar(k string) bool {
	if manifest.CredentialLike(k) || strings.HasPrefix(k, "MAD_SECRETS") || strings.HasPrefix(k, "BENCHCTL_") {
		return false
	}
	switch k {
	case "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
		"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "ROCM_PATH", "HIP_PATH", "CUDA_HOME", "CUDA_PATH":
		return true
	}
	for _, p := range []string{"LC_", "PYTHON", "CONDA_", "MAD_"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
