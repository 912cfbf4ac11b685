package wire

import (
	"context"
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
