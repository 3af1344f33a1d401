package testutil

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestLookupOf(t *testing.T) {
	l := LookupOf(map[string]string{"A": "1", "EMPTY": ""})
	for k, want := range map[string]struct {
		v  string
		ok bool
	}{"A": {"1", true}, "EMPTY": {"", true}, "MISSING": {"", false}} {
		if v, ok := l(k); v != want.v || ok != want.ok {
			t.Errorf("%s: %q %v, want %q %v", k, v, ok, want.v, want.ok)
		}
	}
}

func TestRandomBytes(t *testing.T) {
	a, b := RandomBytes(t, 64), RandomBytes(t, 64)
	if len(a) != 64 || bytes.Equal(a, b) {
		t.Fatalf("%x %x", a, b)
	}
}

func TestSyncBufferKeepsEveryWrite(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%02d\n", i)
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 1600 {
		t.Fatalf("%d lines, want 1600", n)
	}
}
