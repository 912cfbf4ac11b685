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
	"github.com/zoocurator/zoocurator/zktest"
)

// stalledRegistry is a ServiceDiscovery at base whose client (a 30 s session) reaches the
// server through a proxy, with svc/<id> registered (Dynamic) and the keeper's first read
// answered: a stall of the proxy from here on holds only what the test does next.
type stalledRegistry struct {
	proxy *zktest.Proxy
	c     *framework.Client
	other *framework.Client
	d     *discovery.ServiceDiscovery[details]
	inst  *discovery.Instance[details]
	path  string
	ctx   context.Context
}

func newStalledRegistry(t *testing.T, base, id string) *stalledRegistry {
	t.Helper()
	server := zktest.NewServer(t)
	s := &stalledRegistry{proxy: zktest.NewProxy(t, server.ConnectString()), path: base + "/svc/" + id}
	var reads atomic.Int32
	s.c = testutil.ConnectFailFast(t, s.proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			if ri.Op == "getData" && ri.Path == s.path && ri.Err == nil {
				reads.Add(1)
			}
		}))
	s.other = testutil.Connect(t, server.ConnectString())
	s.ctx = testutil.Context(t, 90*time.Second)
	d, err := discovery.New[details](s.c, base)
	require.NoError(t, err)
	t.Cleanup(func() { s.proxy.Heal(); _ = d.Close() })
	s.d = d
	s.inst = newInstance(t, "svc", id, 1)
	require.NoError(t, d.Register(s.ctx, s.inst))
	require.Eventually(t, func() bool { return reads.Load() >= 2 }, 20*time.Second, 5*time.Millisecond,
		"the keeper's first read (after Register's) is answered")
	return s
}

// Every blocking call honours its context (common brief; REFERENCE "A write the caller
// gave up on"): an Unregister with a 500 ms context on a stalled connection must return
// soon after its context ends, its delete going on in the background as the doc says
// ("a guaranteed delete: one that fails for a connection-class reason goes on in the
// background"). deleteNode runs on context.WithoutCancel(ctx) bounded by cleanupTimeout
// (10 s), so the caller waits those 10 s whatever its context says.
func TestReview28UnregisterReturnsWithItsContextOnAStalledConnection(t *testing.T) {
	leakcheck.Check(t)
	s := newStalledRegistry(t, "/disc/r28-unreg-ctx", "a")
	s.proxy.Stall()
	uctx, ucancel := context.WithTimeout(s.ctx, 500*time.Millisecond)
	defer ucancel()
	start := time.Now()
	done := testutil.Go(s.ctx, func(context.Context) error { return s.d.Unregister(uctx, s.inst) })
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Unregister did not return within 30 s")
	}
	took := time.Since(start)
	t.Logf("Unregister with a 500 ms context on a stalled connection returned after %v: %v", took.Round(time.Millisecond), err)
	assert.Less(t, took, 3*time.Second, "Unregister returns soon after its context ends (500 ms)")
	s.proxy.Heal()
}
