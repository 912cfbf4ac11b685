package doublebarrier_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Enter returns by its deadline also when its listing failed with a connection loss
// while its context was still alive: the delete of its member node is
// bounded by the caller's context and goes on in the background, rather than run on a
// detached context for up to 10 s. The connection is cut (and new ones refused) when
// Enter lists the members, and the client notices before the listing is sent; the client
// does not retry, so the listing fails (ErrNoServer) within a second, long before the
// deadline.
func TestEnterReturnsByDeadlineAfterListingFails(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	noRetry, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	var cut atomic.Bool
	var self atomic.Pointer[framework.Client]
	c := testutil.Connect(t, srv.ConnectString(), framework.WithDialer(proxy.Dialer()),
		framework.WithSessionTimeout(30*time.Second), framework.WithRetryPolicy(noRetry),
		framework.WithRequestHook(func(op string) {
			if op == "getChildren" && cut.CompareAndSwap(true, false) {
				proxy.Refuse()
				proxy.DropConnections()
				// Once the client knows (Suspended), every request waits for a connection.
				for deadline := time.Now().Add(20 * time.Second); self.Load().State() != framework.Suspended && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
		}))
	self.Store(c)
	ctx := testutil.Context(t, time.Minute)
	const path = "/deadline/barrier"
	d := newMember(t, c, path, 2)

	const limit = 3 * time.Second
	ectx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cut.Store(true)
	start := time.Now()
	err = d.Enter(ectx)
	took := time.Since(start)
	t.Logf("Enter returned after %v: %v", took, err)
	require.Error(t, err)
	assert.Less(t, took, limit+time.Second, "Enter returned past its deadline")

	proxy.Heal()
	assertNoMembers(t, srv.ConnectString(), path, c)
}
