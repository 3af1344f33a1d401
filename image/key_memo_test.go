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
	if testing.Short() {
		t.Skip("waits for files to settle")
	}
	ctx := t.TempDir()
	df := filepath.Join(ctx, "Dockerfile")
	if err := os.WriteFile(df, []byte("FROM scratch\nCOPY big /big\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctx, "big"), []byte(strings.Repeat("z", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // settled: digestmemo keeps no file written in the last 2 s
	in := BuildInput{Dockerfile: df, Context: ctx}
	want, err := Key(in)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for range 2 {
		m := digestmemo.Open(filepath.Join(cache, "d.json"))
		got, err := KeyUsing(in, m)
		if err != nil || got != want {
			t.Fatalf("KeyUsing = %q, %v; want %q", got, err, want)
		}
		if err := m.Save(); err != nil {
			t.Fatal(err)
		}
	}
}
