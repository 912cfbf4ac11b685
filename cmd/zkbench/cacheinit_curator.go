package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/zoocurator/zoocurator/internal/curatortest"
)

// curatorCacheInit is what the JVM measured; close ends the JVM's cache and session.
type curatorCacheInit struct {
	cached    int
	seconds   float64
	heapBytes int64
	// updates measures how soon the JVM's cache hears changes (curatortest's
	// CacheInit.Updates).
	updates func(ctx context.Context, n int, marker string, change func() error) (time.Duration, error)
	close   func()
}

// runCuratorCacheInit starts Curator 5.4's CuratorCache of base in a JVM
// (curatortest.StartCacheInit) and returns what it measured. The cache stays until close,
// so that the server's watches can be read.
// ready is called once the JVM's session is up, before the cache starts.
func runCuratorCacheInit(ctx context.Context, cfg config, base string, log io.Writer, ready func() error) (curatorCacheInit, error) {
	ci, err := curatortest.StartCacheInit(ctx, cfg.connect, cfg.sessionTimeout, base)
	if err != nil {
		return curatorCacheInit{}, err
	}
	if err := ready(); err != nil {
		_ = ci.Close()
		return curatorCacheInit{}, err
	}
	r, err := ci.Run(ctx)
	if err != nil {
		_ = ci.Close()
		return curatorCacheInit{}, err
	}
	fmt.Fprintf(log, "zkbench: curator cache-init: Initialized with %d nodes in %.2f s\n", r.Cached, r.Seconds)
	return curatorCacheInit{cached: r.Cached, seconds: r.Seconds, heapBytes: r.HeapBytes, updates: ci.Updates, close: func() {
		if err := ci.Close(); err != nil {
			fmt.Fprintf(log, "zkbench: curator cache-init: closing the JVM: %v\n", err)
		}
	}}, nil
}
