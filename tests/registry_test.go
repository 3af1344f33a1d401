package tests

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image"
	"github.com/benchctl/benchctl/jobdir"
	"github.com/benchctl/benchctl/runner"
	"github.com/benchctl/benchctl/tests/testbed"
)

// pushUnique builds, on n1, an image FROM the testbed's shell image with a layer of its own
// (so that its blobs are fetched only for it), pushes it with benchctl build --push to the
// registry at addr as
// e2e/<name>:<nonce>, and removes it from every engine: every node starts cold. It returns
// the registry ref, the image id and the blobs of its manifest.
func pushUnique(t *testing.T, tb *testbed.Testbed, addr, name string) (ref, id string, blobs []string) {
	t.Helper()
	tb.RequireRegistry(t)
	nonce := fmt.Sprint(time.Now().UnixNano())
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+tb.ShellImage+"\nCOPY nonce.txt /nonce.txt\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "nonce.txt"), []byte(name+" "+nonce+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.yaml"), []byte("name: "+name+"\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: b, command: [x]}]\n"), 0o644)
	ref = addr + "/e2e/" + name + ":" + nonce
	// benchctl build --push, with the docker CLI's credentials for the private registry.
	cfg := tb.WriteDockerConfig(t, filepath.Join(dir, "docker"), tb.AuthRegistryUser, tb.AuthRegistryPassword(t))
	cmd := exec.Command(tb.Benchctl(t), "build", "-m", filepath.Join(dir, "m.yaml"), "--shared-dir", t.TempDir(), "-o", "json", "--push", ref)
	cmd.Env = append(tb.Env(), "DOCKER_HOST="+tb.Sockets[tb.Nodes[0]], "DOCKER_CONFIG="+cfg)
	out, err := cmd.Output()
	var rec image.Record
	if err != nil || json.Unmarshal(out, &rec) != nil {
		t.Fatalf("build --push: %v\n%s", err, out)
	}
	if want := addr + "/e2e/" + name + "@sha256:"; !strings.HasPrefix(rec.Pushed, want) {
		t.Fatalf("the record says pushed %q, want %s...", rec.Pushed, want)
	}
	_, blobs = tb.RegistryManifest(t, ref)
	tb.RemoveImage(t, rec.ImageID)
	t.Cleanup(func() { tb.RemoveImage(t, rec.ImageID) })
	return ref, rec.ImageID, blobs
}

func refManifest(t *testing.T, ref, extra string) string {
	t.Helper()
	mf := filepath.Join(t.TempDir(), "m.yaml")
	body := fmt.Sprintf("name: pulled\nimage: {ref: %q}\ngpu: {vendor: none}\n%sbenchmarks:\n  - {name: b, command: [/bin/sh, -c, 'cat /nonce.txt; echo performance: 1 x']}\n", ref, extra)
	os.WriteFile(mf, []byte(body), 0o644)
	return mf
}

// An image.ref that no engine has, only the testbed's registry: a 3-node job pulls it once
// (rank 0; its blobs are fetched once, as the registry's log shows) and every node runs it,
// the workers loading it from the shared cache; job.json and perf.csv record the digest.
func TestRefPulledOnceForTheJob(t *testing.T) {
	tb := testbed.Require(t)
	ref, id, blobs := pushUnique(t, tb, tb.Registry, "pullonce")
	shared := tb.FreshDir(t)
	before := tb.RegistryLogOffset(t, tb.Registry)
	jid, out, err := runJob(t, tb, refManifest(t, ref, ""), shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The config and the image's own layer (the shell image's layer is on every engine).
	for _, b := range []string{blobs[0], blobs[len(blobs)-1]} {
		if n := tb.RegistryBlobGetsSince(t, tb.Registry, before, b); n != 1 {
			t.Errorf("blob %s fetched %d times by a 3-node job; want 1", b, n)
		}
	}
	for i, d := range nodeDirs(tb) {
		s := readStatus(t, shared, jid, d)
		if s.Outcome != runner.OutcomeSuccess || s.ImageID != id {
			t.Errorf("%s: %s on %s: %s", d, s.Outcome, s.ImageID, s.Error)
		}
		if _, err := tb.Engine(t, tb.Nodes[i]).ImageInspect(t.Context(), id); err != nil {
			t.Errorf("%s's engine lacks the image: %v", tb.Nodes[i], err)
		}
	}
	j, err := jobdir.ReadJob(jobdir.Layout{Shared: shared}.Job(jid, 0).JobFile())
	name := strings.TrimSuffix(ref, ref[strings.LastIndex(ref, ":"):])
	if err != nil || !strings.HasPrefix(j.Image.Digest, name+"@sha256:") || j.Image.Key != image.RefKey(id) {
		t.Fatalf("job.json image %+v %v", j.Image, err)
	}
	code, cout, cerr := benchctlRun(t, tb.Env(), "collect", jid, "--shared-dir", shared)
	if code != 0 {
		t.Fatalf("collect: exit %d\n%s\n%s", code, cout, cerr)
	}
	rows := readPerf(t, jobdir.Layout{Shared: shared}.Job(jid, 0).Output(jobdir.PerfFile))
	if len(rows) != 1 || rows[0]["docker_image"] != ref+"@"+strings.TrimPrefix(j.Image.Digest, name+"@") {
		t.Errorf("perf.csv docker_image %q", rows[0]["docker_image"])
	}
}

// distribution: registry: every node pulls the image itself, nothing goes through the
// shared cache.
func TestDistributionRegistryPullsOnEveryNode(t *testing.T) {
	tb := testbed.Require(t)
	ref, id, blobs := pushUnique(t, tb, tb.Registry, "pulleach")
	shared := tb.FreshDir(t)
	before := tb.RegistryLogOffset(t, tb.Registry)
	jid, out, err := runJob(t, tb, refManifest(t, ref, "distribution: registry\n"), shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := tb.RegistryBlobGetsSince(t, tb.Registry, before, blobs[len(blobs)-1]); n != len(tb.Nodes) {
		t.Errorf("the image's own layer was fetched %d times; want once per node (%d)", n, len(tb.Nodes))
	}
	for _, d := range nodeDirs(tb) {
		if s := readStatus(t, shared, jid, d); s.Outcome != runner.OutcomeSuccess || s.ImageID != id {
			t.Errorf("%s: %s on %s: %s", d, s.Outcome, s.ImageID, s.Error)
		}
	}
	if ents, _ := os.ReadDir(image.CacheLayout{Shared: shared}.Dir()); len(ents) != 0 {
		t.Errorf("the shared cache has %d entries; want none", len(ents))
	}
}

// A private registry (htpasswd): wrong credentials fail the job naming the registry and how
// to log in (exit 1); the right ones, from the docker CLI's config, work; the password
// reaches no file under the shared folder and no log.
func TestPrivateRegistryCredentials(t *testing.T) {
	tb := testbed.Require(t)
	ref, id, _ := pushUnique(t, tb, tb.AuthRegistry, "private")
	password := tb.AuthRegistryPassword(t)
	for _, c := range []struct {
		name, password string
		ok             bool
	}{{"wrong", "not-the-password-" + fmt.Sprint(time.Now().UnixNano()), false}, {"right", password, true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("DOCKER_CONFIG", tb.WriteDockerConfig(t, filepath.Join(t.TempDir(), "docker"), tb.AuthRegistryUser, c.password))
			shared := tb.FreshDir(t)
			jid, out, err := runJob(t, tb, refManifest(t, ref, ""), shared, true)
			if c.ok != (err == nil) {
				t.Fatalf("job: %v\n%s", err, out)
			}
			s := readStatus(t, shared, jid, nodeDirs(tb)[0])
			if !c.ok && (s.ExitCode != 1 || !strings.Contains(s.Error, "the registry "+tb.AuthRegistry+" refused access") ||
				!strings.Contains(s.Error, "docker login "+tb.AuthRegistry)) {
				t.Errorf("rank 0: exit %d: %s", s.ExitCode, s.Error)
			}
			if c.ok && s.ImageID != id {
				t.Errorf("rank 0 ran %s, want %s", s.ImageID, id)
			}
			leaks := []string{}
			filepath.WalkDir(shared, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if data, _ := os.ReadFile(p); strings.Contains(string(data), c.password) {
						leaks = append(leaks, p)
					}
				}
				return nil
			})
			if strings.Contains(out, c.password) || len(leaks) > 0 {
				t.Errorf("the password is in the job's output or in %v", leaks)
			}
		})
	}
}

// An image.ref rank 0 already has (pre-loaded, as sites do with big images) is not saved to
// the shared cache: a worker that has it uses its own, one that lacks it pulls it itself by
// rank 0's digest.
func TestPreloadedRefIsNotSavedForNobody(t *testing.T) {
	tb := testbed.Require(t)
	ref, id, blobs := pushUnique(t, tb, tb.Registry, "preloaded")
	if got := tb.PullFromRegistry(t, tb.Nodes[0], ref); got != id {
		t.Fatalf("n1 pulled %s, want %s", got, id)
	}
	if len(tb.Nodes) > 2 {
		tb.PullFromRegistry(t, tb.Nodes[2], ref)
	}
	shared := tb.FreshDir(t)
	before := tb.RegistryLogOffset(t, tb.Registry)
	jid, out, err := runJob(t, tb, refManifest(t, ref, ""), shared, true)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := tb.RegistryBlobGetsSince(t, tb.Registry, before, blobs[len(blobs)-1]); n != 1 {
		t.Errorf("the image's own layer was fetched %d times; want once (n2, the only node without it)", n)
	}
	for _, d := range nodeDirs(tb) {
		if s := readStatus(t, shared, jid, d); s.Outcome != runner.OutcomeSuccess || s.ImageID != id {
			t.Errorf("%s: %s on %s: %s", d, s.Outcome, s.ImageID, s.Error)
		}
	}
	if ents, _ := os.ReadDir(image.CacheLayout{Shared: shared}.Dir()); len(ents) != 0 {
		t.Errorf("the shared cache has %d entries; want none", len(ents))
	}
}
