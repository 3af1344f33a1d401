package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// submit prints the job id; with -o json one object with the job, its node count, the
// script and the job folder (and with --dry-run, sbatch's arguments and the script).
func TestSubmitOutput(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	for name, body := range map[string]string{"sbatch": "#!/bin/sh\necho 4242\n", "squeue": "#!/bin/sh\nexit 0\n"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(mf, []byte("name: x\nimage: {ref: busybox}\ngpu: {vendor: none}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	shared := filepath.Join(dir, "shared")

	code, out, errs := run(t, "submit", "-m", mf, "--shared-dir", shared)
	if code != 0 || out != "4242\n" {
		t.Fatalf("table: exit %d, stdout %q\n%s", code, out, errs)
	}
	code, out, errs = run(t, "submit", "-m", mf, "--shared-dir", shared, "-o", "json")
	var got submitted
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("json: exit %d, stdout %q\n%s", code, out, errs)
	}
	script := got.Script
	if filepath.Dir(script) != filepath.Join(shared, "jobs", ".submit") || !strings.HasSuffix(script, ".sh") {
		t.Errorf("script %s", script)
	}
	want := "{\n  \"job\": \"4242\",\n  \"nodes\": 1,\n  \"script\": \"" + script + "\",\n  \"jobDir\": \"" + filepath.Join(shared, "jobs", "4242") + "\"\n}\n"
	if out != want {
		t.Errorf("json:\n got %q\nwant %q", out, want)
	}

	code, out, errs = run(t, "submit", "-m", mf, "--shared-dir", shared, "--dry-run", "-o", "json")
	var dry dryRunSubmit
	if code != 0 || json.Unmarshal([]byte(out), &dry) != nil || dry.Sbatch[0] != "--parsable" || !strings.HasPrefix(dry.Script, "#!/bin/bash\n") {
		t.Errorf("dry run: exit %d, stdout %q\n%s", code, out, errs)
	}
}
