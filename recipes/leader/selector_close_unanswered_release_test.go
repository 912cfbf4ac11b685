package leader_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestSelectorCloseWithUnansweredReleaseSaysSo: Selector.Close "cancels fn's context or
// the waiting, waits for fn to return and for the node to be deleted (guaranteed)". A
// leader's connection stalls (its session alive on the server: a 30 s timeout) and it is
// closed: fn returns at once, the delete of its node gets no answer. Close must then wait
// for the delete or say that it did not happen (as Latch.Close does: "a failed delete is
// retried in the background, and its error returned"); returning nil while the node still
// leads on the server tells the caller the election was left when it was not.
func TestSelectorCloseWithUnansweredReleaseSaysSo(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cl := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	const path = "/leader/selector-close-stalled"
	f, ts := turns("s")
	s := startSelector(t, cl, path, "s", f)
	nextTurn(t, ts, 10*time.Second, "s leads")
	kids := testutil.Children(t, srv.ConnectString(), path)
	require.Len(t, kids, 1)

	proxy.Stall()
	start := time.Now()
	closeErr := s.Close()
	took := time.Since(start)
	left := testutil.Children(t, srv.ConnectString(), path)
	proxy.Heal()
	if closeErr == nil {
		require.Empty(t, left, "Selector.Close returned nil after %v while its lock node is still on the server (still leading: nobody else can lead)", took.Round(time.Millisecond))
	}
}
