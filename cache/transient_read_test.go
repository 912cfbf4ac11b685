package cache_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// eventLog keeps a cache's events in order and closes initialized at Initialized.
type eventLog struct {
	mu          sync.Mutex
	events      []cache.Event
	suspended   chan struct{}
	initialized chan struct{}
}

func newEventLog() *eventLog {
	return &eventLog{suspended: make(chan struct{}), initialized: make(chan struct{})}
}

func (l *eventLog) on(ev cache.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	switch ev.Type {
	case cache.ConnectionSuspended:
		if !testutil.IsClosed(l.suspended) {
			close(l.suspended)
		}
	case cache.Initialized:
		if !testutil.IsClosed(l.initialized) {
			close(l.initialized)
		}
	}
}

// beforeInitialized returns the events before the first Initialized.
func (l *eventLog) beforeInitialized() []cache.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ev := range l.events {
		if ev.Type == cache.Initialized {
			return append([]cache.Event(nil), l.events[:i]...)
		}
	}
	return append([]cache.Event(nil), l.events...)
}

// The first reads of the children fail once for a connection reason (the connection
// drops while they are on their way, and the client's retry policy makes no second
// attempt), and the server stays out of reach for a while; then the children can be read
// again. The first build must neither drop them nor post Initialized without them: it
// waits, reads them once it can, and only then reports Initialized (the
// transient case; the permanent one is TestInitializedReportsUnreadableChild).
func TestInitializedWaitsForChildAfterTransientReadFailure(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cw := newClient(t, srv.ConnectString())
	const root = "/transient"
	create(t, cw, root, "")
	for _, k := range []string{"a", "b", "c"} {
		create(t, cw, root+"/"+k, k)
	}

	// At the first read of a child's data (the first getData after the parent's children
	// were listed), stall the proxy before the request goes out.
	var (
		mu      sync.Mutex
		listed  bool
		stalled = make(chan struct{})
	)
	hook := func(op string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op == "getChildren":
			listed = true
		case op == "getData" && listed && !testutil.IsClosed(stalled):
			proxy.Stall()
			close(stalled)
		}
	}
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	cc := newClient(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRetryPolicy(noRetry), framework.WithRequestHook(hook))

	pc, err := cache.NewPathChildrenCache(cc, root, cache.WithStartMode(cache.PostInitializedEvent))
	require.NoError(t, err)
	log := newEventLog()
	t.Cleanup(pc.AddListener(log.on))
	ctx := testutil.Context(t, 60*time.Second)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })

	// The child reads are held by the stalled proxy; the connection drops under them (they
	// fail with a connection loss) and no new one gets through.
	testutil.WaitClosed(t, stalled, 20*time.Second, "the first read of a child")
	proxy.Refuse()
	proxy.DropConnections()
	testutil.WaitClosed(t, log.suspended, 20*time.Second, "Suspended")
	// Meanwhile the cache retries on its own timer (100 ms first): it must keep the
	// children it could not read, not post Initialized without them.
	select {
	case <-log.initialized:
		t.Fatalf("Initialized posted while the children could not be read; events: %v", log.beforeInitialized())
	case <-time.After(2 * time.Second):
	}

	proxy.Heal()
	testutil.WaitClosed(t, log.initialized, 30*time.Second, "Initialized")
	added := map[string]bool{}
	for _, ev := range log.beforeInitialized() {
		require.NotEqual(t, cache.Unreadable, ev.Type, "a connection loss is not unreadable: %v", ev)
		if ev.Type == cache.ChildAdded {
			added[ev.Data.Path] = true
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		require.True(t, added[root+"/"+k], "%s/%s not added before Initialized; events: %v", root, k, log.beforeInitialized())
		d, ok := pc.Get(root + "/" + k)
		require.True(t, ok, "%s/%s missing from the cache", root, k)
		require.Equal(t, k, string(d.Data))
	}
	require.NoError(t, cw.Delete(ctx, root, framework.WithChildren()))
}
