package doublebarrier_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// signalHandler is a slog handler that closes ch at the first record with message msg.
type signalHandler struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// A member whose node is made a second time in one Enter (its client lost the session
// while it waited, and the new session replaces the old session's node) does not take a
// leftover ready for live: a ready made before its first node, by no member that could
// have counted it. A ready is left with no member (a round whose Leaves were all cut
// short, here made by hand). v (memberQty 2) enters: it finds that ready, makes its
// node, sees that ready is a leftover and deletes it; that delete is cut off (its host
// drops off the network as the delete is sent: the request hook) and fails, and v's
// client gives its session up. Once the network is back, v's Enter makes its node again
// (it replaces the old session's node) and finds the same leftover: nobody counted v,
// and v, alone, must not go in by it.
func TestEnterMadeAgainNotInByLeftoverReady(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var armed atomic.Bool
	var proxy atomic.Pointer[zktest.Proxy]
	deleteFailed := make(chan struct{})
	logger := slog.New(signalHandler{msg: "deleting a leftover ready failed", once: new(sync.Once), ch: deleteFailed})
	l := newLosingClientWith(t, srv, framework.WithLogger(logger), framework.WithRequestHook(func(op string) {
		if op == "delete" && armed.CompareAndSwap(true, false) {
			p := proxy.Load()
			p.Refuse()
			p.DropConnections()
		}
	}))
	proxy.Store(l.proxy)
	ctx := testutil.Context(t, 2*time.Minute)
	l.connected(t, ctx)
	adm := testutil.ConnectFailFast(t, srv.ConnectString())

	const path = "/madeagain/leftover"
	_, err := adm.Create(ctx, path+"/ready", nil, framework.WithContainerParents())
	require.NoError(t, err)
	leftover, err := adm.Exists(ctx, path+"/ready")
	require.NoError(t, err)

	v := newMember(t, l.c, path, 2)
	oldSid := l.c.SessionID()
	vctx, cancel := context.WithCancel(ctx)
	defer cancel()
	armed.Store(true)
	entered := testutil.Go(vctx, v.Enter)
	testutil.WaitState(t, l.states, framework.Lost, 40*time.Second)
	testutil.WaitClosed(t, deleteFailed, 60*time.Second, "v's delete of the leftover ready fails")
	l.reconnect(t)

	// v either goes in (by the leftover) or deletes it and waits.
	var kids []string
	for {
		select {
		case err := <-entered:
			st, _ := adm.Exists(ctx, path+"/ready")
			node, _ := adm.Exists(ctx, v.Node())
			owner := int64(0)
			if node != nil {
				owner = node.EphemeralOwner
			}
			if err == nil {
				require.NoError(t, v.Leave(ctx))
			}
			require.Failf(t, "v went in alone by a leftover ready",
				"v's Enter returned (%v), memberQty 2, children %v: by the ready (czxid %d, there now: %v) made before its "+
					"first node, its node made again in this Enter (owner 0x%x, the old session 0x%x)",
				err, kids, leftover.Czxid, st != nil && st.Czxid == leftover.Czxid, owner, oldSid)
		case <-time.After(20 * time.Millisecond):
		}
		kids = testutil.Children(t, srv.ConnectString(), path)
		if st, err := adm.Exists(ctx, path+"/ready"); err == nil && (st == nil || st.Czxid != leftover.Czxid) {
			break // the leftover is gone: v deleted it
		}
	}
	testutil.NotYet(t, entered, time.Second, "v's Enter, alone (memberQty 2)")
	cancel()
	require.ErrorIs(t, testutil.Result(t, entered, 20*time.Second, "v's cancelled Enter"), context.Canceled)
	require.NoError(t, l.c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, srv.ExpireSession(ctx, oldSid))
	assertNoMembers(t, srv.ConnectString(), path, l.c, adm)
}
