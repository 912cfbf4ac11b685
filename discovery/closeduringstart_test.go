package discovery_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// A ServiceCache closed while its Start waits for the first read (here: from another
// goroutine, once that read is under way) ends that Start: it returns ErrClosed at once,
// not when its context ends (with context.Background, never).
func TestCacheClosedDuringStartEndsStart(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	var armed atomic.Bool
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	defer func() {
		if !testutil.IsClosed(release) {
			close(release)
		}
	}()
	c := testutil.Connect(t, connect, framework.WithRequestHook(func(op string) {
		if op == "getData" && armed.Load() {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release // the cache's first read of an instance is held
		}
	}))
	other := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 90*time.Second)
	base := "/disc/closestart"
	od, err := discovery.New[details](other, base)
	require.NoError(t, err)
	defer od.Close()
	require.NoError(t, od.Register(ctx, newInstance(t, "svc", "x", 1)))
	d, err := discovery.New[details](c, base)
	require.NoError(t, err)
	defer d.Close()
	sc, err := d.NewCache("svc")
	require.NoError(t, err)

	armed.Store(true)
	const startBound = 30 * time.Second
	sctx, scancel := context.WithTimeout(ctx, startBound)
	defer scancel()
	started := make(chan error, 1)
	begun := time.Now()
	go func() { started <- sc.Start(sctx) }()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the cache never read the instance")
	}
	closed := make(chan error, 1)
	go func() { closed <- sc.Close() }()
	require.Eventually(t, func() bool { return !sc.Fresh() }, 10*time.Second, time.Millisecond, "Close under way")
	armed.Store(false)
	close(release)
	require.NoError(t, <-closed)
	err = <-started
	took := time.Since(begun)
	t.Logf("Start returned after %v: %v", took.Round(time.Millisecond), err)
	assert.ErrorIs(t, err, discovery.ErrClosed, "Start of a cache closed meanwhile")
	assert.Less(t, took, startBound/2, "Start waited for its context to end, though its cache was closed")
}
