package framework

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// A version read is sent back as is, negative ones too (the counter wraps through them),
// except -1, which ZooKeeper takes for "any version".
func TestReadVersion(t *testing.T) {
	for _, v := range []int32{0, 1, math.MaxInt32, math.MinInt32, -2} {
		got, err := ReadVersion(&Stat{Version: v})
		require.NoError(t, err, "version %d", v)
		assert.Equal(t, v, got)
	}
	_, err := ReadVersion(&Stat{Version: -1})
	require.ErrorIs(t, err, ErrWrappedVersion)
}

// A delete bound to the node read (WithMaxCzxid, AsRead, and the background worker that
// keeps WithMaxCzxid) that reads the version -1 refuses, and the node stays: sent at that
// version, the delete would remove whatever node is at the path. A real node reaches -1
// only after 2^32-1 writes; the test makes the server's answer say -1 instead
// (testHookStatRead sees each Stat read before the version is chosen), and the delete
// otherwise runs against a real server. Without the guard each of these deletes the node.
func TestDeleteBoundToNodeReadAtWrappedVersionIsRefused(t *testing.T) {
	testHookStatRead = func(st *zk.Stat) {
		if st != nil {
			st.Version = -1
		}
	}
	t.Cleanup(func() { testHookStatRead = nil })
	srv := zktest.NewServer(t)
	c, err := New(srv.ConnectString(), WithSessionTimeout(30*time.Second))
	require.NoError(t, err)
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, c.BlockUntilConnected(ctx))
	_, err = c.Create(ctx, "/wrapped", []byte("x"))
	require.NoError(t, err)
	_, st, err := c.GetData(ctx, "/wrapped")
	require.NoError(t, err)

	err = c.Delete(ctx, "/wrapped", WithMaxCzxid(st.Czxid), Guaranteed())
	require.ErrorIs(t, err, ErrWrappedVersion, "WithMaxCzxid")

	require.NoError(t, c.Delete(ctx, "/wrapped", WithMaxCzxid(st.Czxid), InBackground()))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx)) // the worker gives the job up

	wrapped := *st
	wrapped.Version = -1
	err = c.Delete(ctx, "/wrapped", AsRead(&wrapped))
	require.ErrorIs(t, err, ErrWrappedVersion, "AsRead")

	now, err := c.Exists(ctx, "/wrapped")
	require.NoError(t, err)
	require.NotNil(t, now, "a delete bound to the node read at version -1 was sent as \"any version\"")
	assert.Equal(t, st.Czxid, now.Czxid)
}
