package sharedcount_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// setDataGate holds a client's next setData request before it is sent, until release:
// a request hook runs on the caller's goroutine before the request goes out.
type setDataGate struct {
	mu      sync.Mutex
	armed   bool
	held    chan struct{} // closed when the armed setData is held
	release chan struct{}
}

func newSetDataGate() *setDataGate {
	return &setDataGate{held: make(chan struct{}), release: make(chan struct{})}
}

func (g *setDataGate) arm() { g.mu.Lock(); g.armed = true; g.mu.Unlock() }

func (g *setDataGate) hook(op string) {
	if op != "setData" {
		return
	}
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(g.held)
		<-g.release
	}
}

// A version is not an identity: between the cache's read and TrySet's
// versioned setData, another participant deletes the count node and makes it again with
// its own value, at version 0 like the node read. The setData (version 0) is applied to
// the new node: ZooKeeper cannot refuse it. TrySet must not report that as a success
// (the other participant's value was overwritten, not the one read).
func TestTrySetOnNodeMadeAgainIsNotASuccess(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	gate := newSetDataGate()
	c1 := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(gate.hook))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/fleet/madeagain"

	a := start(t, c1, path, 5)
	prev, err := a.Get()
	require.NoError(t, err)
	require.Equal(t, int32(5), prev.Value)
	require.Equal(t, int32(0), prev.Version)
	_, before, err := other.GetData(ctx, path)
	require.NoError(t, err)

	gate.arm()
	done := make(chan error, 1)
	go func() { done <- a.TrySet(context.WithoutCancel(ctx), prev, 6) }()
	select {
	case <-gate.held:
	case <-time.After(30 * time.Second):
		t.Fatal("TrySet sent no setData")
	}
	// The other participant resets the value: delete, then make the node again at 0.
	require.NoError(t, other.Delete(ctx, path, framework.WithVersion(-1)))
	_, err = other.Create(ctx, path, sharedcount.Encode(0))
	require.NoError(t, err)
	close(gate.release)
	err = testutil.Result(t, done, 30*time.Second, "TrySet")

	data, st, rerr := other.GetData(ctx, path)
	require.NoError(t, rerr)
	require.NotEqual(t, before.Czxid, st.Czxid, "the node was made again")
	require.Equal(t, sharedcount.Encode(6), data, "the stale setData was applied to the new node (ZooKeeper cannot refuse it)")
	require.Error(t, err, "TrySet wrote over a node made again after its read (czxid %#x, not %#x) and reported success", st.Czxid, before.Czxid)
	assert.ErrorIs(t, err, sharedcount.ErrNodeReplaced)
	assert.ErrorIs(t, err, sharedcount.ErrUnknownOutcome, "the write did not go to the node read")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
	assert.NotErrorIs(t, err, sharedcount.ErrConflict, "something was written: not a conflict")
	now, err := a.Get()
	require.NoError(t, err)
	assert.Equal(t, sharedcount.Versioned[int32]{Value: 6, Version: st.Version, Zxid: st.Mzxid}, now, "Get returns what the node holds now")
}
