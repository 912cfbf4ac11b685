package framework_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A transaction's size is counted exactly: one at 64 bytes below the packet limit is sent
// and the server (jute.maxbuffer at its default, the client's default limit) applies it;
// a byte more is refused before sending.
func TestTransactionSizeCountedExactly(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	// One create of /edge with the default ACL (world:anyone): request header 8, closing
	// multi header 9, op header 9, path 4+5, data 4+n, ACLs 4 + (4 + 4+5 + 4+6), flags 4.
	n := framework.DefaultMaxPacketSize - 64 - (8 + 9 + 9 + 9 + 4 + 4 + 23 + 4)
	before := c.Requests()
	_, err := c.Transaction(ctx, framework.CreateOp("/edge", bytes.Repeat([]byte("x"), n+1), framework.Persistent, nil))
	require.ErrorIs(t, err, framework.ErrDataTooLarge)
	assert.Equal(t, before, c.Requests(), "nothing was sent")
	_, err = c.Transaction(ctx, framework.CreateOp("/edge", bytes.Repeat([]byte("x"), n), framework.Persistent, nil))
	require.NoError(t, err, "the server takes it")
	_, st, err := c.GetData(ctx, "/edge")
	require.NoError(t, err)
	assert.EqualValues(t, n, st.DataLength)
	require.NoError(t, c.Delete(ctx, "/edge"))
}
