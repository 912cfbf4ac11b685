package framework_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A node created WithOwnerToken carries the token in its ACL, besides the client's ACL;
// OwnedBy tells it from a node of another token or none. Name and data are unchanged.
func TestOwnerToken(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	mine, theirs := framework.NewOwnerToken(), framework.NewOwnerToken()
	assert.NotEqual(t, mine, theirs)
	assert.True(t, framework.OwnerToken{}.IsZero())
	assert.False(t, mine.IsZero())
	assert.Regexp(t, `^zoocurator-owner:[0-9a-f-]{36}$`, mine.String())

	p, err := c.Create(ctx, "/owned/n", []byte("d"), framework.WithOwnerToken(mine), framework.WithParents())
	require.NoError(t, err)
	assert.Equal(t, "/owned/n", p)
	acl, _, err := c.GetACL(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, []zk.ACL{zk.WorldACL(zk.PermAll)[0], mine.ACL()}, acl)
	data, _, err := c.GetData(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "d", string(data))

	st, owned, err := c.OwnedBy(ctx, p, mine)
	require.NoError(t, err)
	require.NotNil(t, st)
	assert.True(t, owned)
	st, owned, err = c.OwnedBy(ctx, p, theirs)
	require.NoError(t, err)
	require.NotNil(t, st)
	assert.False(t, owned)
	_, err = c.Create(ctx, "/owned/plain", nil)
	require.NoError(t, err)
	st, owned, err = c.OwnedBy(ctx, "/owned/plain", mine)
	require.NoError(t, err)
	assert.NotNil(t, st)
	assert.False(t, owned)
	st, owned, err = c.OwnedBy(ctx, "/owned/none", mine)
	require.NoError(t, err)
	assert.Nil(t, st)
	assert.False(t, owned)

	// Another token's node at the path: NodeExists, as without a token.
	_, err = c.Create(ctx, "/owned/n", nil, framework.WithOwnerToken(theirs))
	assert.ErrorIs(t, err, framework.ErrNodeExists)
	assert.NotErrorIs(t, err, framework.ErrUnknownOutcome)

	for _, m := range []framework.CreateMode{framework.PersistentSequential, framework.EphemeralSequential} {
		_, err = c.Create(ctx, "/owned/seq-", nil, framework.WithOwnerToken(mine), framework.WithMode(m))
		require.NoError(t, err)
	}
	_, err = c.Create(ctx, "/owned/seq-", nil, framework.WithOwnerToken(theirs), framework.WithMode(framework.PersistentSequential))
	require.NoError(t, err)
	_, err = c.Create(ctx, "/owned/seq-x", nil, framework.WithOwnerToken(mine))
	require.NoError(t, err)
	found, err := c.FindOwned(ctx, "/owned/seq-", mine)
	require.NoError(t, err)
	assert.Equal(t, []string{"/owned/seq-0000000002", "/owned/seq-0000000003"}, found)
	found, err = c.FindOwned(ctx, "/none/seq-", mine)
	require.NoError(t, err)
	assert.Empty(t, found)

	_, err = c.Create(ctx, "/owned/p", nil, framework.WithOwnerToken(mine), framework.WithProtection())
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
}

// The reply to a sequential create WithOwnerToken is lost: the retry finds the node by
// its token and returns it; there is one node (TestUnprotectedCreateThroughLostReplyDuplicates
// is the control without a token).
func TestOwnedSequentialCreateThroughLostReply(t *testing.T) {
	for _, m := range []framework.CreateMode{framework.EphemeralSequential, framework.PersistentSequential} {
		t.Run(map[framework.CreateMode]string{framework.EphemeralSequential: "ephemeral", framework.PersistentSequential: "persistent"}[m], func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			c := testutil.ConnectFailFast(t, proxy.ConnectString())
			ctx := testCtx(t)
			require.NoError(t, c.EnsurePath(ctx, "/seq"))
			tok := framework.NewOwnerToken()
			proxy.DropNextCreateReply()
			p, st, err := c.CreateStat(ctx, "/seq/n-", []byte("me"), framework.WithMode(m), framework.WithOwnerToken(tok))
			require.NoError(t, err)
			assert.Equal(t, 2, proxy.Accepted(), "the create's connection was dropped")
			kids, err := zktest.Children(ctx, srv.ConnectString(), "/seq")
			require.NoError(t, err)
			require.Equal(t, []string{"n-0000000000"}, kids, "exactly one node, the first attempt's")
			assert.Equal(t, "/seq/n-0000000000", p)
			require.NotNil(t, st)
			assert.Equal(t, m == framework.EphemeralSequential, st.EphemeralOwner == c.SessionID())
		})
	}
}

// The reply to a plain create WithOwnerToken is lost: the retry's NodeExists is resolved
// by the token: success, not an unknown outcome. Without the token the same is an unknown
// outcome (the control).
func TestOwnedCreateThroughLostReply(t *testing.T) {
	for _, owned := range []bool{true, false} {
		t.Run(map[bool]string{true: "token", false: "control"}[owned], func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			c := testutil.ConnectFailFast(t, proxy.ConnectString())
			ctx := testCtx(t)
			require.NoError(t, c.EnsurePath(ctx, "/plain"))
			var opts []framework.CreateOption
			if owned {
				opts = append(opts, framework.WithOwnerToken(framework.NewOwnerToken()))
			}
			proxy.DropNextCreateReply()
			p, err := c.Create(ctx, "/plain/n", []byte("me"), append(opts, framework.WithMode(framework.Ephemeral))...)
			assert.Equal(t, 2, proxy.Accepted(), "the create's connection was dropped")
			if !owned {
				require.ErrorIs(t, err, framework.ErrUnknownOutcome)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "/plain/n", p)
		})
	}
}
