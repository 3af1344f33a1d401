package image

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// BuildKit receives exactly the entries the key covers.
func TestContextFSIsWhatTheKeySees(t *testing.T) {
	in := ctxDir(t)
	os.WriteFile(filepath.Join(in.Context, "file[!x].txt"), []byte("odd name"), 0o644)
	os.WriteFile(filepath.Join(in.Context, "fileb.txt"), []byte("b"), 0o644)
	os.WriteFile(filepath.Join(in.Context, ".dockerignore"), []byte("file[!x].txt\nbuild/\n!build/keep.txt\n"), 0o644)
	os.MkdirAll(filepath.Join(in.Context, "build"), 0o755)
	os.WriteFile(filepath.Join(in.Context, "build", "keep.txt"), []byte("k"), 0o644)
	os.WriteFile(filepath.Join(in.Context, "build", "drop.txt"), []byte("d"), 0o644)
	files, err := walkContext(in)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, f.rel)
	}
	cfs, err := contextFS(in)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = cfs.Walk(context.Background(), "", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		got = append(got, filepath.ToSlash(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s is covered by the key but not sent", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) && g != "build" {
			t.Errorf("%s is sent but not covered by the key", g)
		}
	}
	if !slices.Contains(got, "build/keep.txt") || slices.Contains(got, "build/drop.txt") {
		t.Errorf("re-include under an ignored folder: %v", got)
	}
}
