package atomic_test

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
	"github.com/zoocurator/zoocurator/recipes/atomic"
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

// A version is not an identity: between an increment's read (5, version 0)
// and its versioned setData, the counter node is deleted and made again at 0 (version 0
// too). The setData is applied to the new node: the reset is lost, and "Pre 5, Post 6" is
// a result the server never gave. The increment must report that, never a result.
func TestIncrementOnNodeMadeAgainIsNotAResult(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	gate := newSetDataGate()
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(gate.hook))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counters/madeagain"
	l, err := atomic.NewLong(c, path)
	require.NoError(t, err)
	ok, err := l.Initialize(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)
	_, before, err := other.GetData(ctx, path)
	require.NoError(t, err)
	require.Equal(t, int32(0), before.Version)

	gate.arm()
	type out struct {
		r   atomic.Result[int64]
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := l.Increment(context.WithoutCancel(ctx))
		done <- out{r, err}
	}()
	select {
	case <-gate.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the increment sent no setData")
	}
	// Someone resets the counter: delete, then make the node again at 0.
	require.NoError(t, other.Delete(ctx, path, framework.WithVersion(-1)))
	_, err = other.Create(ctx, path, []byte{0, 0, 0, 0, 0, 0, 0, 0})
	require.NoError(t, err)
	close(gate.release)
	var got out
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the increment did not return")
	}

	data, st, err := other.GetData(ctx, path)
	require.NoError(t, err)
	require.NotEqual(t, before.Czxid, st.Czxid, "the node was made again")
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 6}, data, "the stale setData was applied to the new node (ZooKeeper cannot refuse it)")
	require.Error(t, got.err, "the increment reported %+v, a result the server never gave (the node it wrote was made again after its read)", got.r)
	assert.False(t, got.r.Succeeded)
	assert.ErrorIs(t, got.err, atomic.ErrNodeReplaced)
	assert.ErrorIs(t, got.err, atomic.ErrUnknownOutcome)
	assert.ErrorIs(t, got.err, framework.ErrUnknownOutcome)
	assert.Equal(t, int64(5), got.r.Pre, "read from the node that was deleted")
	assert.Equal(t, int64(6), got.r.Post, "the value written to the new node")
	assert.Equal(t, 1, got.r.Stats.OptimisticTries, "not tried again")
}

// Atomic's unknown outcome and the framework's are one meaning, one errors.Is.
func TestUnknownOutcomeIsTheFrameworks(t *testing.T) {
	assert.ErrorIs(t, atomic.ErrUnknownOutcome, framework.ErrUnknownOutcome)
	assert.ErrorIs(t, framework.ErrUnknownOutcome, atomic.ErrUnknownOutcome)
}
