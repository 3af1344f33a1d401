//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchctl/benchctl/image"
)

var removedRE = regexp.MustCompile(`(?m)^(removed|would remove) `)

// A co-writer of the shared directory links cache/images/corrupt to someone's folder:
// 'cache prune' (no flags) removes nothing there and says why.
func TestCachePruneLeavesALinkedQuarantine(t *testing.T) {
	shared := t.TempDir()
	publish(t, shared, 1)
	victim := t.TempDir()
	for _, n := range []string{"id_ed25519", strings.Repeat("ab", 32) + ".20240101T000000.tar"} {
		os.WriteFile(filepath.Join(victim, n), []byte("precious"), 0o600)
	}
	q := image.CacheLayout{Shared: shared}.Quarantine()
	if err := os.Symlink(victim, q); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--dry-run"}, nil, {"-o", "json"}} {
		code, out, errs := run(t, append([]string{"cache", "prune", "--shared-dir", shared}, args...)...)
		if code != 0 || removedRE.MatchString(out) || strings.Contains(out, `"path"`) || !strings.Contains(out+errs, q) || !strings.Contains(out+errs, "symbolic link") {
			t.Errorf("prune %v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 2 {
		t.Fatalf("files were removed through the link: %v", ents)
	}
}

// <key>.tar -> a secret file with a made-up checksum: 'cache verify' neither reads it nor
// prints its hash; a FIFO in place of a tar fails verify without blocking it.
func TestCacheVerifyRefusesPlantedTars(t *testing.T) {
	shared := t.TempDir()
	keys := publish(t, shared, 2)
	dir := image.CacheLayout{Shared: shared}.Dir()
	secret := filepath.Join(t.TempDir(), "shadow")
	body := []byte("root:$6$hash:19000::::::\n")
	os.WriteFile(secret, body, 0o600)
	s := sha256.Sum256(body)
	sum := hex.EncodeToString(s[:])
	os.Remove(filepath.Join(dir, keys[0]+".tar"))
	os.Symlink(secret, filepath.Join(dir, keys[0]+".tar"))
	os.WriteFile(filepath.Join(dir, keys[0]+".tar.sha256"), []byte(sum+"  "+keys[0]+".tar\n"), 0o644) // the right guess
	os.Remove(filepath.Join(dir, keys[1]+".tar"))
	if err := syscall.Mkfifo(filepath.Join(dir, keys[1]+".tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code      int
		out, errs string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := run(t, "cache", "verify", "--shared-dir", shared)
		done <- result{code, out, errs}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("cache verify blocked on a FIFO")
	}
	if r.code != 1 || strings.Contains(r.out+r.errs, sum[:16]) || strings.Count(r.out, "FAILED") != 2 ||
		!strings.Contains(r.out, "symbolic link") || !strings.Contains(r.out, "FIFO") {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.out, r.errs)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != string(body) {
		t.Fatalf("the secret was touched: %v", err)
	}
	if code, out, errs := run(t, "cache", "prune", "--shared-dir", shared); code != 0 || strings.Contains(out, "skipped") {
		t.Fatalf("prune after verify: exit %d\n%s%s", code, out, errs)
	}
}
