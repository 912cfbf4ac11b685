package framework_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// ErrNoServer means that go-zookeeper gave the request up before sending it (it found no
// server to send it to): a write sent again after it meets no attempt of its own, and its
// answer is the server's plain answer, not an unknown outcome. The create is queued
// while the client is disconnected and the server refuses connections, so go-zookeeper
// fails it with ErrNoServer; its retry, once the server is back, finds the node that
// another client made before.
func TestWriteAfterNoServerIsNotUnknownOutcome(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	ctx := testCtx(t)
	_, err := other.Create(ctx, "/taken", nil)
	require.NoError(t, err)

	var self atomic.Pointer[framework.Client]
	var cut atomic.Bool // the next create cuts the connection before it is queued
	var mu sync.Mutex
	var createErrs []error
	hook := framework.WithRequestHook(func(op string) {
		if op != "create" || !cut.CompareAndSwap(true, false) {
			return
		}
		proxy.Refuse()
		proxy.DropConnections()
		// Suspended comes after go-zookeeper's send and receive loops ended: the create,
		// queued after this, is not sent on the old connection.
		for deadline := time.Now().Add(20 * time.Second); self.Load().State() != framework.Suspended && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	})
	observe := framework.WithRequestObserver(func(r framework.RequestInfo) {
		if r.Op != "create" {
			return
		}
		mu.Lock()
		createErrs = append(createErrs, r.Err)
		mu.Unlock()
		if errors.Is(r.Err, framework.ErrNoServer) {
			proxy.Heal()
		}
	})
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(30*time.Second), hook, observe)
	self.Store(c)

	cut.Store(true)
	_, err = c.Create(ctx, "/taken", nil)
	mu.Lock()
	t.Logf("the create's attempts: %v", createErrs)
	require.NotEmpty(t, createErrs)
	require.ErrorIs(t, createErrs[0], framework.ErrNoServer, "the first attempt was not sent")
	mu.Unlock()
	assert.ErrorIs(t, err, framework.ErrNodeExists)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome, "no attempt of this create was sent before the one answered NodeExists")
}
