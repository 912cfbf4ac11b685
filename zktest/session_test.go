package zktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The server ends the session at once: its ephemeral node is gone when ExpireSession
// returns, the client reports Lost and goes on with a new session.
func TestExpireSessionEndsSessionAndItsEphemerals(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	victim := testutil.Connect(t, srv.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	other := testutil.Connect(t, srv.ConnectString())
	states := testutil.States(victim)
	ctx := testutil.Context(t, 60*time.Second)

	const node = "/expire-session/e"
	_, err := victim.Create(ctx, node, []byte("x"), framework.WithMode(framework.Ephemeral), framework.WithParents())
	require.NoError(t, err)
	sid := victim.SessionID()
	require.NotZero(t, sid)

	start := time.Now()
	require.NoError(t, srv.ExpireSession(ctx, sid))
	st, err := other.Exists(ctx, node)
	require.NoError(t, err)
	assert.Nil(t, st, "the expired session's ephemeral node is still there")
	assert.Less(t, time.Since(start), 20*time.Second, "ExpireSession waited for the session timeout")

	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
	testutil.WaitState(t, states, framework.Reconnected, 30*time.Second)
	assert.NotEqual(t, sid, victim.SessionID(), "the client kept the expired session")
	_, err = victim.Create(ctx, node, nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err, "the client does not work on its new session")
	require.NoError(t, victim.Delete(ctx, node))
	require.NoError(t, other.Delete(ctx, "/expire-session"))

	// A session that has ended is expired already.
	require.NoError(t, srv.ExpireSession(ctx, sid))
}

// A session of an ensemble is ended through any member.
func TestExpireSessionOnEnsemble(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3)
	victim := testutil.Connect(t, ens.Addr(0))
	other := testutil.Connect(t, ens.Addr(2))
	states := testutil.States(victim)
	ctx := testutil.Context(t, 60*time.Second)

	const node = "/expire-ensemble"
	_, err := victim.Create(ctx, node, nil, framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	sid := victim.SessionID()

	require.NoError(t, zktest.ExpireSession(ctx, ens.Addr(1), sid))
	require.NoError(t, other.Sync(ctx, node))
	st, err := other.Exists(ctx, node)
	require.NoError(t, err)
	assert.Nil(t, st, "the expired session's ephemeral node is still there")
	testutil.WaitState(t, states, framework.Lost, 30*time.Second)
}

func TestExpireSessionRefusesSessionZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := zktest.ExpireSession(ctx, "127.0.0.1:1", 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "session id 0")
}
