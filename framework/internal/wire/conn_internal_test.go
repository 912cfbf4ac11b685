package wire

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// After xid MaxInt32 comes 1: the reserved negative xids and zero are never used.
func TestConnXidWrapsToOne(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.Addr(), Config{})
	require.NoError(t, err)
	defer c.Close()
	c.mu.Lock()
	c.xid = math.MaxInt32 - 1
	c.mu.Unlock()
	var xids []int32
	for range 3 {
		cl := c.send(opExists, 0, &pathWatchRequest{path: "/"})
		xids = append(xids, cl.xid)
		r := c.wait(ctx, cl)
		require.NoError(t, r.err)
		require.Zero(t, r.code)
	}
	assert.Equal(t, []int32{math.MaxInt32, 1, 2}, xids)
}

// A request beyond MaxFrame is not sent, and the Conn goes on; a reply beyond it ends the
// Conn (the stream cannot be read past it).
func TestConnEnforcesMaxFrame(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	big, err := Dial(ctx, srv.Addr(), Config{})
	require.NoError(t, err)
	defer big.Close()
	_, err = big.Create(ctx, "/big", make([]byte, 2048), zk.WorldACL(zk.PermAll), ModePersistent, 0)
	require.NoError(t, err)

	c, err := Dial(ctx, srv.Addr(), Config{MaxFrame: 1024})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.SetData(ctx, "/big", make([]byte, 2048), -1)
	assert.ErrorIs(t, err, ErrFrameTooLarge)
	_, err = c.Exists(ctx, "/big", false)
	require.NoError(t, err)
	_, err = c.GetData(ctx, "/big", false)
	assert.ErrorIs(t, err, ErrConnectionLost)
	assert.ErrorIs(t, c.Err(), ErrMalformed)
}

func TestSetWatchesBatchesSplitAndPrefix(t *testing.T) {
	long := func(prefix string, n int) []string {
		var v []string
		for i := range n {
			v = append(v, fmt.Sprintf("%s/%0100d", prefix, i)) // 102 bytes
		}
		return v
	}
	tests := []struct {
		name    string
		chroot  string
		w       Watches
		batches int
		v2      []bool
	}{
		{name: "none", w: Watches{}, batches: 0},
		{name: "classic watches in one SetWatches", w: Watches{Data: []string{"/a"}, Exist: []string{"/b"}, Child: []string{"/c"}}, batches: 1, v2: []bool{false}},
		{name: "persistent watches need SetWatches2", w: Watches{Data: []string{"/a"}, PersistentRecursive: []string{"/r"}}, batches: 1, v2: []bool{true}},
		{name: "chroot prefixed", chroot: "/app", w: Watches{Child: []string{"/", "/c"}}, batches: 1, v2: []bool{false}},
		{name: "split at 128 KB", w: Watches{Data: long("/d", 1500), Persistent: long("/p", 1000)}, batches: 2, v2: []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Conn{cfg: Config{Chroot: tt.chroot, LastZxid: 42}}
			got := c.setWatchesBatches(tt.w)
			require.Len(t, got, tt.batches)
			var all Watches
			for i, b := range got {
				assert.Equal(t, int64(42), b.relativeZxid)
				assert.Equal(t, tt.v2[i], b.v2, "batch %d", i)
				size := 0
				for _, l := range [][]string{b.data, b.exist, b.child, b.persistent, b.recurse} {
					for _, p := range l {
						size += len(p)
					}
				}
				assert.Less(t, size, setWatchesBatchSize+200, "batch %d", i)
				all.Data = append(all.Data, b.data...)
				all.Exist = append(all.Exist, b.exist...)
				all.Child = append(all.Child, b.child...)
				all.Persistent = append(all.Persistent, b.persistent...)
				all.PersistentRecursive = append(all.PersistentRecursive, b.recurse...)
			}
			want := Watches{}
			for _, pair := range []struct {
				dst *[]string
				src []string
			}{
				{&want.Data, tt.w.Data}, {&want.Exist, tt.w.Exist}, {&want.Child, tt.w.Child},
				{&want.Persistent, tt.w.Persistent}, {&want.PersistentRecursive, tt.w.PersistentRecursive},
			} {
				for _, p := range pair.src {
					*pair.dst = append(*pair.dst, c.full(p))
				}
			}
			assert.Equal(t, want, all, "every watch once, in order, with the chroot")
		})
	}
}

func TestChrootFullAndStrip(t *testing.T) {
	c := &Conn{cfg: Config{Chroot: "/app"}}
	for _, tt := range []struct{ client, server string }{
		{"/", "/app"}, {"/a", "/app/a"}, {"/a/b", "/app/a/b"},
	} {
		assert.Equal(t, tt.server, c.full(tt.client))
		assert.Equal(t, tt.client, c.strip(tt.server))
	}
	assert.Equal(t, "/apple", c.strip("/apple"), "not below the chroot: left as it is")
	none := &Conn{}
	assert.Equal(t, "/a", none.full("/a"))
	assert.Equal(t, "/a", none.strip("/a"))
}
