package framework

import (
	"testing"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
)

type countHandler struct{ n int }

func (h *countHandler) WatchFired(*Watch, Event) { h.n++ }

// TestWatchRegistryFootprint: a Watch a cache holds for each node and kind is
// small (what only some need lives in watchExtra, made by the first that does), and the
// registry drops a connection's maps once its watches fired, so that a replaced
// connection holds nothing.
func TestWatchRegistryFootprint(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Watch{}), uintptr(48), "a Watch with one handler")

	ws := newWatches()
	c1, c2 := gozk{&zk.Conn{}}, gozk{&zk.Conn{}}
	var hs [4]countHandler
	var keys []watchKey
	for _, conn := range []zkConn{c1, c2} {
		for _, k := range []watchKind{watchData, watchExists, watchChildren} {
			key := watchKey{conn, k, "/a"}
			w, arm := ws.get(key)
			require.True(t, arm)
			w2, arm := ws.get(key)
			require.False(t, arm)
			require.Same(t, w, w2, "one watch per connection, kind and path")
			ws.armed(key, w, watchSet{}, nil)
			w.Handle(&hs[0])
			require.Nil(t, w.x, "no extra for a watch with one handler, armed without error")
			keys = append(keys, key)
		}
	}
	require.Equal(t, 6, ws.len())
	require.True(t, ws.armedAny())

	// Several handlers, one withdrawn.
	w := ws.lookup(keys[0])
	w.Handle(&hs[1])
	w.Handle(&hs[2])
	w.Unhandle(&hs[0])
	w.Unhandle(&hs[3]) // never given: nothing

	// A failed arming forgets the watch.
	fk := watchKey{c1, watchData, "/b"}
	fw, _ := ws.get(fk)
	ws.armed(fk, fw, watchSet{}, zk.ErrNoNode)
	armErr, fired := ws.state(fw)
	require.ErrorIs(t, armErr, zk.ErrNoNode)
	require.False(t, fired)
	require.Equal(t, 6, ws.len())

	ws.notify(c1, zk.Event{Type: zk.EventNodeDeleted, Path: "/a"})
	require.Equal(t, 3, ws.len())
	require.Len(t, ws.m, 1, "c1's maps are dropped once its watches fired")
	require.Equal(t, 2, hs[0].n, "the two c1 watches that kept hs[0]")
	require.Equal(t, 1, hs[1].n)
	require.Equal(t, 1, hs[2].n)
	require.Equal(t, zk.EventNodeDeleted, w.Event().Type)
	select {
	case <-w.Done():
	default:
		t.Fatal("a fired watch's Done is closed")
	}

	ws.closeAll()
	require.Zero(t, ws.len())
	require.Empty(t, ws.m)
	require.False(t, ws.armedAny())
	require.Equal(t, 5, hs[0].n)
}
