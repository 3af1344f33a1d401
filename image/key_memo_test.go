package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image/digestmemo"
)

// The key is the same with the memo as without it.
func TestKeyUsingAMemo(t *testing.T) {
	ctx := t.TempDir()
	df := filepath.Join(ctx, "Dockerfile")
	if err := os.WriteFile(df, []byte("FROM scratch\nCOPY big /big\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctx, "big"), []byte(strings.Repeat("z", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	in := BuildInput{Dockerfile: df, Context: ctx}
	want, err := Key(in)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for range 2 {
		m := digestmemo.Open(filepath.Join(cache, "d.json"))
		m.Now = func() time.Time { return time.Now().Add(time.Minute) } // the files have settled
		got, err := KeyUsing(in, m)
		if err != nil || got != want {
			t.Fatalf("KeyUsing = %q, %v; want %q", got, err, want)
		}
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := os.ReadFile(filepath.Join(cache, "d.json"))
	if err != nil || !strings.Contains(string(kept), filepath.Join(ctx, "big")) {
		t.Fatalf("the context's file was not kept in the memo: %v %s", err, kept)
	}
}
