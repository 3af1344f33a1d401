package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image"
)

// publish puts n entries in a cache under shared, the newest last, and returns their keys.
func publish(t *testing.T, shared string, n int) []string {
	t.Helper()
	c, err := image.OpenCache(shared)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range n {
		key := strings.Repeat(fmt.Sprintf("%02x", 0xa0+i), 32)
		created := time.Now().Add(time.Duration(i-n) * time.Minute)
		_, err := c.Publish(context.Background(), key, image.Meta{ImageID: "sha256:x", Created: created}, 0, func(w io.Writer, _ *image.Meta) error {
			_, err := fmt.Fprintf(w, "tar %d", i)
			return err
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return keys
}

// cache prune: no limit removes no complete entry; --keep N and --older-than D remove what
// they say, 0 included; --dry-run removes nothing.
func TestCachePruneLimits(t *testing.T) {
	shared := t.TempDir()
	keys := publish(t, shared, 3)
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, 0},
		{[]string{"--keep", "2"}, 1},
		{[]string{"--keep", "0"}, 3},
		{[]string{"--older-than", "0s"}, 3},
		{[]string{"--older-than", "150s"}, 1},
		{[]string{"--older-than", "1h"}, 0},
		{[]string{"--older-than", "0s", "--keep", "1"}, 2},
	} {
		args := append([]string{"cache", "prune", "--shared-dir", shared, "--dry-run"}, c.args...)
		code, out, errs := run(t, args...)
		if got := strings.Count(out, "would remove"); code != 0 || got != c.want {
			t.Errorf("prune %v: exit %d, %d entries, want %d\n%s%s", c.args, code, got, c.want, out, errs)
		}
	}
	if code, out, _ := run(t, "cache", "prune", "--shared-dir", shared, "--keep", "1"); code != 0 || strings.Count(out, "removed") != 2 {
		t.Fatalf("prune --keep 1: %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(image.CacheLayout{Shared: shared}.Dir(), keys[2]+".tar")); err != nil {
		t.Fatalf("the newest entry was removed: %v", err)
	}
	// Keys are found whatever their case.
	if code, out, errs := run(t, "cache", "verify", "--shared-dir", shared, strings.ToUpper(keys[2][:8])); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("verify by an upper-case prefix: %d\n%s%s", code, out, errs)
	}
}

// Builder flags that do not go together are bad input.
func TestBuildBuilderFlagConflicts(t *testing.T) {
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.yaml")
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	os.WriteFile(mf, []byte("name: x\nimage: {dockerfile: Dockerfile}\nbenchmarks: [{name: a, command: [\"true\"]}]\n"), 0o644)
	for _, args := range [][]string{
		{"--builder", "buildkit", "--buildkit-addr", "unix:///nonexistent", "--engine-builder", "classic"},
		{"--builder", "docker", "--buildkit-addr", "unix:///nonexistent"},
	} {
		code, _, errs := run(t, append([]string{"build", "--manifest", mf, "--shared-dir", dir}, args...)...)
		if code != 4 || !strings.Contains(errs, "applies only to --builder") {
			t.Errorf("%v: exit %d\n%s", args, code, errs)
		}
	}
}
