package leader_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestTermContextEndsBeforeListener: when a listener hears that leadership is gone, every
// context of the ended term (the task's) is already cancelled, so a task that checks its
// context cannot run once more after the listener was told. The term ends
// twice: its node is deleted from another client, and the latch is closed with
// CloseNotifyLeader. The listener looks at the contexts without waiting.
func TestTermContextEndsBeforeListener(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())
	other := testutil.Connect(t, srv.ConnectString())
	l := startLatch(t, c, "/leader/fence", "a", leader.WithCloseMode(leader.CloseNotifyLeader))

	// Many contexts per term, so that an asynchronous cancellation would show.
	const perTerm = 200
	var (
		mu   sync.Mutex
		ctxs []context.Context
	)
	heard := make(chan int, 10) // contexts not yet done when the listener heard "false"
	l.AddListener(func(isLeader bool) {
		if isLeader {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		open := 0
		for _, cx := range ctxs {
			if cx.Err() == nil {
				open++
			}
		}
		heard <- open
	})
	contexts := func(term *leader.Term) {
		mu.Lock()
		defer mu.Unlock()
		ctxs = ctxs[:0]
		for range perTerm {
			cx, cancel := term.Context(ctx)
			t.Cleanup(cancel)
			ctxs = append(ctxs, cx)
		}
	}
	wait := func(what string) {
		t.Helper()
		select {
		case open := <-heard:
			assert.Zero(t, open, "%s: term contexts still open when the listener heard leadership is gone", what)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the listener did not hear leadership is gone", what)
		}
	}

	term := await(t, l, 20*time.Second, "a leads")
	contexts(term)
	require.NoError(t, other.Delete(ctx, term.Node()))
	wait("node deleted")

	term2 := await(t, l, 20*time.Second, "a leads again with a new node")
	require.NotEqual(t, term.Node(), term2.Node())
	contexts(term2)
	require.NoError(t, l.Close())
	wait("Close")
	assertNoChildren(t, srv.ConnectString(), "/leader/fence", c, other)
}
