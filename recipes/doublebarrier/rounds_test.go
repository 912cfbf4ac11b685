package doublebarrier_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member that hears of its round's end only after the others entered the next round
// (with the same node names) does not take their new nodes for its round's: its Leave
// returns once it can hear that the round's ready is gone. Deterministic: a's replies are
// held in the proxy from the moment its node is gone (it then waits for the lowest) until
// b and c have left and entered again.
func TestLeaveDoesNotWaitForTheNextRound(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	const path = "/rounds/barrier"
	slow := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second),
		framework.WithConnectionTimeout(60*time.Second))
	cb, cc := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	b, c := newMember(t, cb, path, 3), newMember(t, cc, path, 3)
	lowest := min(b.Node(), c.Node())
	var a *doublebarrier.DoubleBarrier
	for a == nil || a.Node() < lowest { // a must not be the lowest: it deletes its node first
		a = newMember(t, slow, path, 3)
	}
	errs := make(chan error, 3)
	for _, d := range []*doublebarrier.DoubleBarrier{a, b, c} {
		go func() { errs <- d.Enter(ctx) }()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	aLeft := make(chan error, 1)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		aLeft <- a.Leave(lctx)
	}()
	// a has deleted its node and set its watch on the lowest; from now on it hears nothing.
	require.Eventually(t, func() bool {
		kids := testutil.Children(t, srv.ConnectString(), path)
		if len(kids) != 3 { // b, c and ready
			return false
		}
		out, err := zktest.FourLetterWord(srv.Addr(), "wchp", 5*time.Second)
		return err == nil && strings.Contains(out, lowest+"\n")
	}, 20*time.Second, 5*time.Millisecond, "a did not delete its node and watch the lowest")
	proxy.StallToClients()
	go func() { errs <- b.Leave(ctx) }()
	go func() { errs <- c.Leave(ctx) }()
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	// The next round: b and c enter again (same names) and wait for a third.
	next := make(chan error, 2)
	nctx, ncancel := context.WithCancel(ctx)
	defer ncancel()
	go func() { next <- b.Enter(nctx) }()
	go func() { next <- c.Enter(nctx) }()
	waitChildren(t, srv.ConnectString(), path, 2)
	proxy.Heal()
	select {
	case err := <-aLeft:
		assert.NoError(t, err, "a's Leave")
	case <-time.After(15 * time.Second):
		t.Errorf("a's Leave of the round that ended still waits, 15 s after it could hear of it")
		assert.NoError(t, <-aLeft, "a's Leave")
	}
	ncancel()
	for range 2 {
		if err := <-next; !errors.Is(err, context.Canceled) {
			t.Errorf("next round's Enter: %v, want context.Canceled", err)
		}
	}
	assertNoMembers(t, srv.ConnectString(), path, slow, cb, cc)
}
