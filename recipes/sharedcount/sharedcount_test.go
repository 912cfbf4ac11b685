package sharedcount_test

import (
	"errors"
	"github.com/go-zookeeper/zk"
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

func TestNewBadInput(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	_, err = sharedcount.New(nil, "/c", 1)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, p := range []string{"", "c", "/c/", "/a//b", "/", "/zookeeper", "/a\x00b"} {
		_, err := sharedcount.New(c, p, 1)
		assert.Error(t, err, "path %q", p)
	}
	sc, err := sharedcount.New(c, "/c", 1)
	require.NoError(t, err)
	_, err = sc.Get()
	assert.ErrorIs(t, err, sharedcount.ErrNotStarted)
	assert.ErrorIs(t, sc.Set(t.Context(), 2), sharedcount.ErrNotStarted)
	require.NoError(t, sc.Close())
	require.NoError(t, sc.Close(), "Close twice is fine")
	assert.ErrorIs(t, sc.Start(t.Context()), sharedcount.ErrClosed)
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want int32
		ok   bool
	}{
		{[]byte{0, 0, 0, 7}, 7, true},
		{[]byte{0xff, 0xff, 0xff, 0xff}, -1, true},
		{[]byte{0x7f, 0xff, 0xff, 0xff}, 2147483647, true},
		{nil, 0, false},
		{[]byte{1, 2, 3}, 0, false},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 7}, 0, false},
	} {
		n, err := sharedcount.Decode("/c", tc.b)
		if !tc.ok {
			var bd *sharedcount.BadDataError
			require.ErrorAs(t, err, &bd, "% x", tc.b)
			assert.ErrorIs(t, err, sharedcount.ErrBadData)
			assert.Equal(t, tc.b, bd.Data)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, n)
		assert.Equal(t, tc.b, sharedcount.Encode(n))
	}
}

func start(t *testing.T, c *framework.Client, path string, seed int32) *sharedcount.Count {
	t.Helper()
	sc, err := sharedcount.New(c, path, seed)
	require.NoError(t, err)
	require.NoError(t, sc.Start(testutil.Context(t, 30*time.Second)))
	t.Cleanup(func() { _ = sc.Close() })
	return sc
}

// listen returns a channel that receives each new value sc hears.
func listen(sc *sharedcount.Count) <-chan sharedcount.Versioned[int32] {
	ch := make(chan sharedcount.Versioned[int32], 64)
	sc.AddListener(func(v sharedcount.Versioned[int32], err error) {
		if err == nil {
			ch <- v
		}
	})
	return ch
}

func waitValue(t *testing.T, ch <-chan sharedcount.Versioned[int32], want int32) sharedcount.Versioned[int32] {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case v := <-ch:
			if v.Value == want {
				return v
			}
		case <-deadline:
			t.Fatalf("value %d not heard", want)
		}
	}
}

// Two participants on one count: the seed is written once, a TrySet from a stale version
// is refused and writes nothing, a Set is seen by the other through its watch.
func TestTrySetConflictAndWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	c2 := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/fleet/workers"

	a := start(t, c1, path, 5)
	b := start(t, c2, path, 9) // the node exists: its seed is not written
	heardB := listen(b)
	va, err := a.Get()
	require.NoError(t, err)
	vb, err := b.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(5), va.Value)
	assert.Equal(t, va, vb)

	require.NoError(t, a.TrySet(ctx, va, 6))
	got := waitValue(t, heardB, 6)
	now, err := b.Get()
	require.NoError(t, err)
	assert.Equal(t, got, now)

	err = a.TrySet(ctx, va, 7) // va is stale
	require.ErrorIs(t, err, sharedcount.ErrConflict)
	assert.NotErrorIs(t, err, sharedcount.ErrUnknownOutcome)
	data, st, err := c1.GetData(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, sharedcount.Encode(6), data, "a refused TrySet writes nothing")
	assert.Equal(t, int32(1), st.Version)

	require.NoError(t, b.Set(ctx, -3))
	cur, err := b.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(-3), cur.Value)
}

// A count node written by someone else with the wrong length: Get says which bytes it
// found; the listener hears the error.
func TestBadData(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	_, err := c.Create(ctx, "/bad", []byte("12345678"), framework.WithParents())
	require.NoError(t, err)
	sc := start(t, c, "/bad", 1)
	_, err = sc.Get()
	var bd *sharedcount.BadDataError
	require.ErrorAs(t, err, &bd)
	assert.Equal(t, []byte("12345678"), bd.Data)
	assert.Contains(t, err.Error(), "8 bytes (31 32 33 34 35 36 37 38)")
}

// A change made while a participant is cut off is seen once it reconnects; state
// listeners hear the suspension and the reconnection.
func TestReadAgainAfterReconnect(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cut := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)

	a := start(t, cut, "/cfg/n", 1)
	states := make(chan framework.State, 16)
	a.AddStateListener(func(s framework.State) { states <- s })
	heard := listen(a)
	b := start(t, other, "/cfg/n", 1)

	proxy.Stall()
	testutil.WaitState(t, states, framework.Suspended, 30*time.Second)
	require.NoError(t, b.Set(ctx, 42))
	proxy.Heal()
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	waitValue(t, heard, 42)
	v, err := a.Get()
	require.NoError(t, err)
	assert.Equal(t, int32(42), v.Value)
}

// A Set cancelled before it is sent reports the context's error and writes nothing.
func TestCancelledBeforeSending(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	sc := start(t, c, "/cancel", 1)
	cctx, ccancel := cancelled()
	defer ccancel()
	err := sc.Set(cctx, 2)
	require.Error(t, err)
	assert.True(t, errors.Is(err, cctx.Err()))
	assert.NotErrorIs(t, err, sharedcount.ErrUnknownOutcome, "nothing was sent")
}

// A count node made unreadable for a while (its ACL denies this client's READ), changed
// meanwhile, then made readable again: once it can be read, the count holds what the node
// holds ("the value Get returns is refreshed each time the node changes"). ZooKeeper tells
// a client of no change to a node it may not read, and setACL fires no watch: the count
// must read the node on its own to learn of the change made while it could not (the
// caches do: "The cache reads such a node again every 10 seconds").
func TestCountFollowsChangeMadeWhileNodeWasUnreadable(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const path = "/counts/hidden-for-a-while"
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	owner := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("owner:pw")))
	ctx := testutil.Context(t, 60*time.Second)
	sc, err := sharedcount.New(c, path, 1)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close() })
	t.Cleanup(func() { _ = owner.Delete(ctx, "/counts", framework.WithChildren(), framework.Quietly()) })

	_, err = owner.SetACL(ctx, path, zk.DigestACL(zk.PermAll, "owner", "pw"), -1)
	require.NoError(t, err)
	_, err = owner.SetData(ctx, path, sharedcount.Encode(2), -1)
	require.NoError(t, err)
	_, err = owner.SetACL(ctx, path, zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	data, _, err := c.GetData(ctx, path)
	require.NoError(t, err, "the node is readable again")
	require.Equal(t, sharedcount.Encode(2), data)
	deadline := time.Now().Add(25 * time.Second)
	for {
		v, err := sc.Get()
		require.NoError(t, err)
		if v.Value == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the count still says %d (version %d) 25 s after its node, readable again, holds 2", v.Value, v.Version)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
