package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchctl/benchctl/commands"
	"github.com/benchctl/benchctl/manifest"
)

func TestSchemaPrintsTheManifestSchema(t *testing.T) {
	want, err := manifest.Schema()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "schema")
	if code != 0 || out != string(want) || errs != "" {
		t.Fatalf("exit %d, stderr %q, stdout is the schema: %v", code, errs, out == string(want))
	}
	if code, _, errs := run(t, "schema", "extra"); code != exitInvalid || !strings.Contains(errs, "unknown command") {
		t.Errorf("an argument: exit %d, %q", code, errs)
	}
}

// init's manifest names the schema on its first line, and the schema is beside it.
func TestInitPointsEditorsAtTheSchema(t *testing.T) {
	dir := t.TempDir()
	df := filepath.Join(dir, "Dockerfile")
	os.WriteFile(df, []byte("FROM scratch\n"), 0o644)
	code, out, errs := run(t, "init", "--dockerfile", df)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	mf := strings.TrimSpace(out)
	text, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(text), "\n")
	if want := "# yaml-language-server: $schema=./" + commands.SchemaFileName; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	schema, err := os.ReadFile(filepath.Join(dir, commands.SchemaFileName))
	want, _ := manifest.Schema()
	if err != nil || string(schema) != string(want) {
		t.Errorf("%s beside the manifest is not the schema (%v)", commands.SchemaFileName, err)
	}
	if !strings.Contains(errs, filepath.Join(dir, commands.SchemaFileName)) {
		t.Errorf("stderr does not name the schema file: %q", errs)
	}
	if code, _, errs := run(t, "validate", "--manifest", mf); code != 0 {
		t.Errorf("the manifest does not validate: %s", errs)
	}
	// An old copy is replaced by this version's schema.
	os.Remove(mf)
	os.WriteFile(filepath.Join(dir, commands.SchemaFileName), []byte("{}"), 0o644)
	if code, _, errs := run(t, "init", "--dockerfile", df); code != 0 {
		t.Fatalf("second init: exit %d: %s", code, errs)
	}
	if schema, _ := os.ReadFile(filepath.Join(dir, commands.SchemaFileName)); string(schema) != string(want) {
		t.Errorf("an old %s was kept", commands.SchemaFileName)
	}
}
