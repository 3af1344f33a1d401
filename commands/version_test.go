package commands

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/gpu"
)

// Built without -ldflags (go build, go install), benchctl says what the Go toolchain
// recorded instead of "dev (commit unknown)"; -X values win; nothing recorded is dev/unknown.
func TestBuildFrom(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "d6a48fe82c4eb755cc5e1ef233bcf0c77117a691"
	const pseudo = "v0.0.0-20261125095352-d6a48fe82c4e+dirty"
	goBuild := &debug.BuildInfo{Main: debug.Module{Path: "github.com/benchctl/benchctl", Version: pseudo},
		Settings: vcs("-buildmode", "exe", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-25T09:53:52Z", "vcs.modified", "true")}
	platform := ", " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	for _, c := range []struct {
		name              string
		ldVersion, ldComm string
		bi                *debug.BuildInfo
		want              buildInfo
		line              string
	}{
		{"go build in a changed work tree", "", "", goBuild,
			buildInfo{Version: pseudo, Commit: rev, Modified: true, CommitTime: "2026-11-25T09:53:52Z"},
			pseudo + " (commit " + rev + ", modified" + platform},
		{"go install of a release", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			buildInfo{Version: "v1.4.0", Commit: "unknown"}, "v1.4.0 (commit unknown" + platform},
		{"a clean work tree, -buildvcs on, module version (devel)", "", "",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", rev, "vcs.modified", "false", "vcs.time", "2026-11-25T09:53:52Z")},
			buildInfo{Version: "dev", Commit: rev, CommitTime: "2026-11-25T09:53:52Z"}, "dev (commit " + rev + platform},
		{"-buildvcs=false", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("-buildmode", "exe")},
			buildInfo{Version: "dev", Commit: "unknown"}, "dev (commit unknown" + platform},
		{"no build info", "", "", nil, buildInfo{Version: "dev", Commit: "unknown"}, "dev (commit unknown" + platform},
		{"make (-ldflags -X) wins", "v1.4.0-3-gd6a48fe-dirty", "d6a48fe", goBuild,
			buildInfo{Version: "v1.4.0-3-gd6a48fe-dirty", Commit: "d6a48fe"}, "v1.4.0-3-gd6a48fe-dirty (commit d6a48fe" + platform},
		{"-X version only: the recorded revision", "v1.4.0", "", goBuild,
			buildInfo{Version: "v1.4.0", Commit: rev, Modified: true, CommitTime: "2026-11-25T09:53:52Z"}, "v1.4.0 (commit " + rev + ", modified" + platform},
	} {
		got := buildFrom(c.ldVersion, c.ldComm, c.bi)
		c.want.GoVersion, c.want.Platform, c.want.GPUs = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH, gpu.Build
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
		if got.String() != c.line {
			t.Errorf("%s: %q, want %q", c.name, got.String(), c.line)
		}
	}
}

// The build says what it reads GPUs with: a CGO_ENABLED=0 build, that it has no NVML (the
// static build that runs inside someone else's container).
func TestBuildSaysHowItReadsGPUs(t *testing.T) {
	b := CurrentBuild()
	cgo := strings.HasPrefix(gpu.Build, "cgo:")
	if b.GPUs != gpu.Build || cgo == strings.Contains(b.GPUs, "no NVML") {
		t.Fatalf("gpus %q", b.GPUs)
	}
}
