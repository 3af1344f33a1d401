package doctor

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/benchctl/benchctl/jobdir"
)

// fakeDoctorEngine answers Run's calls; infoErr fails Info.
type fakeDoctorEngine struct {
	infoErr error
	closed  int
	version *client.ServerVersionResult             // nil: Docker 29.0.0
	libpod  func(context.Context) (net.Conn, error) // Podman's own API (nil: it does not answer)
}

func (f *fakeDoctorEngine) Dialer() func(context.Context) (net.Conn, error) {
	return dialerOf(f.libpod)
}

func (f *fakeDoctorEngine) ServerVersion(context.Context, client.ServerVersionOptions) (client.ServerVersionResult, error) {
	if f.version != nil {
		return *f.version, nil
	}
	return client.ServerVersionResult{Version: "29.0.0", APIVersion: "1.52"}, nil
}

func (f *fakeDoctorEngine) Info(context.Context, client.InfoOptions) (client.SystemInfoResult, error) {
	return client.SystemInfoResult{}, f.infoErr
}

func (f *fakeDoctorEngine) DaemonHost() string { return "unix:///fake.sock" }

func (f *fakeDoctorEngine) Close() error { f.closed++; return nil }

// Run asks its engine through Engine: what the engine says, or why it could not,
// is the "docker engine" line, and a connected engine is closed once.
// doctor --engine podman on a Docker Engine fails the engine line, naming both.
func TestDoctorEngineKind(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	eng := &fakeDoctorEngine{}
	checks := Run(context.Background(), Options{Node: nodeOf(t, noEnv), SharedDir: t.TempDir(), Lookup: noEnv, EngineKind: "podman",
		Engine: func() (Engine, error) { return eng, nil }})
	c := checks[1]
	if c.Name != "docker engine" || c.OK || !strings.Contains(c.Detail, "engine podman was asked for") || !strings.Contains(c.Detail, "Docker Engine 29.0.0") || c.Fix == "" {
		t.Errorf("engine line = %+v", c)
	}
	pv := client.ServerVersionResult{Version: "4.3.1", APIVersion: "1.41", Components: []system.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}}
	checks = Run(context.Background(), Options{Node: nodeOf(t, noEnv), SharedDir: t.TempDir(), Lookup: noEnv, EngineKind: "podman",
		Engine: func() (Engine, error) {
			return &fakeDoctorEngine{version: &pv, libpod: libpodAnswering(t, false)}, nil
		}})
	if c := checks[1]; c.Name != "podman engine" || !c.OK || c.Detail != "unix:///fake.sock: Podman Engine 4.3.1 (API 1.41, rootful)" {
		t.Errorf("podman line = %+v", c)
	}
	// A Podman that cannot say whether it runs rootless fails the line where Podman was
	// asked for, and is named so where any engine will do.
	checks = Run(context.Background(), Options{Node: nodeOf(t, noEnv), SharedDir: t.TempDir(), Lookup: noEnv, EngineKind: "podman",
		Engine: func() (Engine, error) { return &fakeDoctorEngine{version: &pv}, nil }})
	if c := checks[1]; c.Name != "podman engine" || c.OK || !strings.Contains(c.Detail, "cannot tell whether the Podman engine at unix:///fake.sock runs rootless") {
		t.Errorf("podman line, rootless not known = %+v", c)
	}
	checks = Run(context.Background(), Options{Node: nodeOf(t, noEnv), SharedDir: t.TempDir(), Lookup: noEnv,
		Engine: func() (Engine, error) { return &fakeDoctorEngine{version: &pv}, nil }})
	if c := checks[1]; c.Name != "podman engine" || !c.OK || !strings.Contains(c.Detail, "rootless not known, taken as rootful") || !strings.Contains(c.Detail, "no engine API here") ||
		!strings.Contains(c.Detail, "the engine's resource limits are not known, so containers keep Podman's defaults") {
		t.Errorf("podman line, any engine, rootless not known = %+v", c)
	}
}

func TestDoctorEngineCheck(t *testing.T) {
	const fix = "start dockerd on this node and point DOCKER_HOST at it (or add your user to the docker group)"
	noEnv := func(string) (string, bool) { return "", false }
	cases := []struct {
		name    string
		eng     *fakeDoctorEngine
		connErr error
		want    []Check
	}{
		{"answers", &fakeDoctorEngine{}, nil, []Check{{Name: "docker engine", OK: true, Detail: "unix:///fake.sock: Docker Engine 29.0.0 (API 1.52, rootful)"}}},
		// one failed line saying why (it was two: a failed line with the version, then why)
		{"info fails", &fakeDoctorEngine{infoErr: errors.New("info: boom")}, nil, []Check{
			{Name: "docker engine", Detail: "info: boom", Fix: fix}}},
		{"no engine", nil, errors.New("Cannot connect to the Docker daemon"), []Check{{Name: "docker engine", Detail: "Cannot connect to the Docker daemon", Fix: fix}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := t.TempDir()
			checks := Run(context.Background(), Options{Node: nodeOf(t, noEnv), SharedDir: shared, Lookup: noEnv, Engine: func() (Engine, error) {
				if c.connErr != nil {
					return nil, c.connErr
				}
				return c.eng, nil
			}})
			var got []Check
			for _, ch := range checks {
				if ch.Name == "docker engine" {
					got = append(got, ch)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("engine checks = %+v, want %+v", got, c.want)
			}
			if c.eng != nil && c.eng.closed != 1 {
				t.Errorf("engine closed %d times, want 1", c.eng.closed)
			}
			// A one-node run leaves no marker behind in the doctor's folder.
			if ents, err := os.ReadDir(jobdir.Layout{Shared: shared}.Doctor("")); err != nil || len(ents) != 0 {
				t.Errorf("the doctor folder holds %v (%v), want it empty", ents, err)
			}
		})
	}
}
