package commands

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	goio "io"
	"log/slog"
	"os"
	"runtime"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/internal/exitcode"
	"github.com/benchctl/benchctl/internal/iostreams"
	"github.com/benchctl/benchctl/runner/remote"
)

// benchctlImageFiles are where the benchctl image holds its two files.
var benchctlImageFiles = [2]string{"usr/local/bin/benchctl", "usr/local/bin/" + remote.AgentName}

// PushBenchctlImage makes the benchctl image (build --benchctl-image --push REF): this
// benchctl and its agent, both static, and nothing else (a Kubernetes job's init container
// runs its benchctl self-copy), loaded into the engine and pushed to ref with the docker
// CLI's credentials.
func PushBenchctlImage(ctx context.Context, io iostreams.Streams, ref, engine string) error {
	if _, err := image.RegistryOf(ref); err != nil {
		return exitcode.Usagef("give a reference such as registry.example.com:5000/team/benchctl:1", "--push %q is not an image reference: %v", ref, err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := static(self); err != nil { // said first: the agent of a CGO build is no help
		return err
	}
	agent, err := remote.AgentBinary()
	if err != nil {
		return exitcode.Usagef("build it beside benchctl (make build), or name it with "+remote.EnvAgent, "the agent: %v", err)
	}
	if err := static(agent); err != nil {
		return err
	}
	tarball, err := os.CreateTemp("", "benchctl-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(tarball.Name())
	defer tarball.Close()
	local := "benchctl/benchctl:" + imageTag(CurrentBuild().Version)
	if err := writeBenchctlImage(tarball, local, [2]string{self, agent}); err != nil {
		return fmt.Errorf("making the benchctl image: %w", err)
	}
	if _, err := tarball.Seek(0, 0); err != nil {
		return err
	}
	pp := newProgressPrinter(io.ErrOut(), io.CanRedrawStderr())
	pushed, err := image.LoadAndPush(ctx, engine, tarball, local, ref, os.LookupEnv, pp.Func())
	if err != nil {
		return err
	}
	if pushed == "" {
		pushed = ref
	}
	slog.Info("pushed the benchctl image; name it as the manifest's kubernetes.benchctlImage", "image", pushed)
	fmt.Fprintln(io.Out(), pushed)
	return nil
}

// static refuses a program linked dynamically: the benchctl image has no libraries.
func static(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return exitcode.Usagef("build benchctl static (CGO_ENABLED=0 make build) and run that one's build --benchctl-image",
				"%s is linked dynamically (built with cgo, for NVML and AMD SMI); the benchctl image holds it alone, without a libc", p)
		}
	}
	return nil
}

// imageTag is a version as an image tag (what a tag may not hold becomes '-').
func imageTag(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) == 0 || b[0] == '.' || b[0] == '-' {
		b = append([]byte("v"), b...)
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}

// writeBenchctlImage writes a docker-archive of one layer holding files (benchctl and its
// agent) at benchctlImageFiles, tagged tag.
func writeBenchctlImage(w goio.Writer, tag string, files [2]string) error {
	layer, err := os.CreateTemp("", "benchctl-layer-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	h := sha256.New()
	lw := tar.NewWriter(goio.MultiWriter(layer, h))
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := lw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	for i, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err == nil {
			err = lw.WriteHeader(&tar.Header{Name: benchctlImageFiles[i], Typeflag: tar.TypeReg, Mode: 0o755, Size: st.Size()})
		}
		if err == nil {
			_, err = goio.CopyN(lw, f, st.Size())
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	if err := lw.Close(); err != nil {
		return err
	}
	diff := hex.EncodeToString(h.Sum(nil))
	cfg, _ := json.Marshal(map[string]any{"architecture": runtime.GOARCH, "os": "linux",
		"config": map[string]any{"Entrypoint": []string{"/" + benchctlImageFiles[0]}, "Env": []string{"PATH=/usr/local/bin"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + diff}}})
	cs := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cs[:]) + ".json"
	man, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{tag}, "Layers": []string{diff + "/layer.tar"}}})
	st, err := layer.Stat()
	if err != nil {
		return err
	}
	if _, err := layer.Seek(0, 0); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range []struct {
		name string
		data []byte
	}{{"manifest.json", man}, {cfgName, cfg}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: diff + "/layer.tar", Typeflag: tar.TypeReg, Mode: 0o644, Size: st.Size()}); err != nil {
		return err
	}
	if _, err := goio.CopyN(tw, layer, st.Size()); err != nil {
		return err
	}
	return tw.Close()
}
