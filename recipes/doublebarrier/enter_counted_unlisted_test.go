package doublebarrier_test

import (
	"context"
	"errors"
	"sync/atomic"
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

// An Enter whose context ends after its node was made, and counted, but before it looked
// at ready or listed the members, says that it may have been counted. a (memberQty 2)
// makes its node; as soon as the create is answered (a's request observer), b enters,
// counts a's node, makes ready and goes in; then a's context is cancelled, so that a's
// next request (its look at ready) is not sent. a withdraws its node. The package doc:
// "When the barrier opened after the member node was made and before it went (a member
// counted it and made ready meanwhile …), the others may have gone in counting this
// member: the error then matches ErrCountedBeforeWithdrawn too." Here ready was made
// after a's node and before its withdrawal, and b is in counting a: a's error must match
// ErrCountedBeforeWithdrawn (or a must be in).
func TestEnterCancelledBeforeItsFirstLookSaysItWasCounted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, time.Minute)
	const path = "/counted/before-first-look"
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	b := newMember(t, other, path, 2)

	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var aNode atomic.Value
	aNode.Store("")
	var armed atomic.Bool
	bIn := make(chan error, 1)
	ca := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(r framework.RequestInfo) {
		if r.Op != "create" || r.Err != nil || r.Path != aNode.Load() || !armed.CompareAndSwap(true, false) {
			return
		}
		// a's node is made: b counts it and opens the barrier; then a's context ends.
		bIn <- b.Enter(ctx)
		cancel()
	}))
	a := newMember(t, ca, path, 2)
	aNode.Store(a.Node())
	armed.Store(true)

	err := a.Enter(actx)
	require.NoError(t, <-bIn, "b, counting a's node")
	if err == nil {
		require.NoError(t, a.Leave(ctx))
	}
	assert.True(t, err == nil || errors.Is(err, doublebarrier.ErrCountedBeforeWithdrawn),
		"a's Enter returned %v after b counted a's node and went in (ready made after a's node, before a withdrew it): "+
			"it must match ErrCountedBeforeWithdrawn", err)
	require.NoError(t, b.Leave(ctx))
	assertNoMembers(t, srv.ConnectString(), path, ca, other)
}
