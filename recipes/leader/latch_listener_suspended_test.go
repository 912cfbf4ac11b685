package leader_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A leader's listeners "hear of each change" and are called "with false when its
// leadership ends"; the term ends on Suspended under the standard policy, and Done
// closing is followed by the listeners ("the term's contexts are cancelled first, then
// Done closes, then the listeners are called with false"). Here the connection drops
// while the leading latch re-reads its node after a data change (someone wrote into it,
// as a revocation request does): the term ends (Done closes), but the latch's loop is out
// of the select that tells the listeners and waits, in its backoff and then for a
// connection, before it looks again. The listener keeps believing it leads for as long
// as the client is cut off (and, with CloseSilent, is never told if the latch is closed
// meanwhile). The interleaving is driven by the request hook: the connection drops, and
// stays refused, as the re-read is sent.
func TestLatchListenerHearsSuspendedDuringReread(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu    sync.Mutex
		armed bool
	)
	cut := make(chan struct{})
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if armed && op == "getData" {
				armed = false
				proxy.Refuse()
				proxy.DropConnections() // the re-read goes out on a connection that is gone
				close(cut)
			}
		}))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/leader/listener-suspended-during-reread"

	la := startLatch(t, ca, path, "a")
	rec := record(la)
	term := await(t, la, 20*time.Second, "a leads")
	rec.wait(t, true, 10*time.Second)
	node := la.Node()

	mu.Lock()
	armed = true
	mu.Unlock()
	_, err := cb.SetData(ctx, node, []byte("written"), -1)
	require.NoError(t, err)
	testutil.WaitClosed(t, cut, 20*time.Second, "a's re-read of its node after the data change")
	testutil.WaitClosed(t, term.Done(), 20*time.Second, "a's term on Suspended")
	require.False(t, la.HasLeadership())

	select {
	case got := <-rec.ch:
		require.False(t, got, "listener event")
	case <-time.After(10 * time.Second):
		proxy.Heal()
		t.Fatalf("a's term ended (Done closed, HasLeadership false) on Suspended, but its listener, told true, heard nothing in 10 s while the client is cut off (events %v)", rec.events())
	}
	proxy.Heal()
	require.NoError(t, la.Close())
	assertNoChildren(t, srv.ConnectString(), path, ca, cb)
}
