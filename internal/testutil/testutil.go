// Package testutil holds the helpers that tests of several packages share: an environment
// lookup from a map, random bytes, and a buffer safe for concurrent writers. Only tests
// import it.
package testutil

import (
	"crypto/rand"
	"strings"
	"sync"
	"testing"
)

// LookupOf is an os.LookupEnv that answers from m.
func LookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// RandomBytes is n random bytes; it fails the test if the system cannot give them.
func RandomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// SyncBuffer is a log sink safe for concurrent writers (a node's or a rank's log written
// from several goroutines).
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
