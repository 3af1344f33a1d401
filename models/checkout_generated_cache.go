package models

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/benchctl/benchctl/internal/safefile"
	"github.com/benchctl/benchctl/manifest"
)

// generatorCache holds what each get_models_json.py made in this process, so that one
// process runs a generator once however often the checkout's catalog loads (run --tags
// loads it to check the GPU vendor, then imports it). The key is the script's path, its
// checkout, its timeout and the digest of its text: a changed script runs again. A run cut
// short by its caller's context is not kept.
//
// Each node of a job loads the checkout and so runs the generator once, on that node; the
// job compares what the nodes selected (see runner's catalog check) and fails when they
// differ.
var generatorCache = struct {
	sync.Mutex
	m map[generatorKey]*generatorEntry
}{m: map[generatorKey]*generatorEntry{}}

type generatorKey struct {
	root, gen string
	timeout   time.Duration
	sum       [sha256.Size]byte
}

type generatorEntry struct {
	done chan struct{} // closed when c and err are set
	c    *Catalog
	err  error
}

// cachedGeneratedCatalog is generatedCatalog, run once per script text in this process;
// each caller gets its own copy of the catalog's models and warnings.
func cachedGeneratedCatalog(ctx context.Context, root, gen string, timeout time.Duration) (*Catalog, error) {
	text, err := safefile.ReadFile(gen, manifest.MaxFileSize)
	if err != nil {
		return nil, catalogError(gen, 0, fmt.Sprintf("cannot read it: %v", err))
	}
	key := generatorKey{root: root, gen: gen, timeout: timeout, sum: sha256.Sum256(text)}
	for {
		generatorCache.Lock()
		e, ok := generatorCache.m[key]
		if !ok {
			e = &generatorEntry{done: make(chan struct{})}
			generatorCache.m[key] = e
		}
		generatorCache.Unlock()
		if ok {
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("running %s: %w", gen, context.Cause(ctx))
			}
			if e.c == nil && e.err == nil {
				continue // its runner was cancelled: run it here
			}
			return copyCatalog(e.c), e.err
		}
		c, err := generatedCatalog(ctx, root, gen, timeout)
		if ctx.Err() != nil {
			generatorCache.Lock()
			delete(generatorCache.m, key)
			generatorCache.Unlock()
			close(e.done)
			return nil, err
		}
		e.c, e.err = c, err
		close(e.done)
		return copyCatalog(c), err
	}
}

// copyCatalog is a copy of c whose Models and Warnings a caller may change (nil for nil).
func copyCatalog(c *Catalog) *Catalog {
	if c == nil {
		return nil
	}
	cp := *c
	cp.Models, cp.Warnings = slices.Clone(c.Models), slices.Clone(c.Warnings)
	return &cp
}
