package persistentnode_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// A TTL ZooKeeper refuses whatever the server (under a millisecond, or over its maximum
// of 2^40-1 ms) is refused at construction, for a TTLNode and for a Node of a TTL mode.
func TestNewTTLOutOfRange(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	for _, ttl := range []time.Duration{time.Microsecond, (1 << 40) * time.Millisecond} {
		_, err := persistentnode.NewTTL(c, "/t", ttl, nil)
		assert.ErrorIs(t, err, framework.ErrInvalidArgument, "NewTTL with TTL %v", ttl)
		_, err = persistentnode.New(c, "/t", nil, persistentnode.WithMode(framework.PersistentWithTTL), persistentnode.WithTTL(ttl))
		assert.ErrorIs(t, err, framework.ErrInvalidArgument, "New with TTL %v", ttl)
	}
	_, err = persistentnode.NewTTL(c, "/t", (1<<40-1)*time.Millisecond, nil)
	assert.NoError(t, err, "the maximum itself")
}

// The server refuses the TTL child (here: the container, someone else's, grants no
// CREATE; a server without extendedTypesEnabled refuses every TTL node likewise): the
// refusal reaches the caller, WaitForInitialCreate returns it, instead of nil with the
// refusal logged at Debug.
func TestTTLNodeWaitForInitialCreateReturnsRefusedTouch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/ttl-refused"
	_, err := other.Create(ctx, path, nil, framework.WithParents(),
		framework.WithNodeACL(zk.WorldACL(zk.PermAll&^zk.PermCreate)))
	require.NoError(t, err)
	tn, err := persistentnode.NewTTL(c, path, time.Minute, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	err = tn.WaitForInitialCreate(ctx)
	require.NoError(t, tn.Close())
	require.Error(t, err, "WaitForInitialCreate returned nil, but the server refused the TTL child")
	assert.ErrorIs(t, err, framework.ErrNoAuth)
	assert.NoError(t, ctx.Err(), "returned on the refusal, not at the context's end")
	require.NoError(t, other.Delete(ctx, "/pn", framework.WithChildren()))
}
