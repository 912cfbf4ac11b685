package groupmember_test

import (
	"context"
	"github.com/go-zookeeper/zk"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestNewBadInput(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	_, err = groupmember.New(nil, "/g", "a", nil)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, p := range []string{"", "g", "/g/", "/a//b", "/zookeeper", "/a\x00b", "/"} {
		_, err := groupmember.New(c, p, "a", nil)
		assert.Error(t, err, "path %q", p)
	}
	for _, id := range []string{"", ".", "..", "a/b", "a\x00", "zookeeper\x01"} {
		_, err := groupmember.New(c, "/g", id, nil)
		assert.Error(t, err, "id %q", id)
	}
	m, err := groupmember.New(c, "/g", "a", nil)
	require.NoError(t, err)
	_, err = m.CurrentMembers()
	assert.ErrorIs(t, err, groupmember.ErrNotStarted)
	assert.ErrorIs(t, m.WaitForInitialCreate(t.Context()), groupmember.ErrNotStarted)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	assert.ErrorIs(t, m.Start(t.Context()), groupmember.ErrClosed)
	_, err = m.CurrentMembers()
	assert.ErrorIs(t, err, groupmember.ErrClosed)
	assert.ErrorIs(t, m.SetThisData(t.Context(), nil), groupmember.ErrClosed)
}

func join(t *testing.T, c *framework.Client, path, id, payload string) *groupmember.Member {
	t.Helper()
	m, err := groupmember.New(c, path, id, []byte(payload))
	require.NoError(t, err)
	ctx := testutil.Context(t, 30*time.Second)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.WaitForInitialCreate(ctx))
	return m
}

// waitMembers waits until m sees exactly want (id → payload).
func waitMembers(t *testing.T, m *groupmember.Member, want map[string]string) {
	t.Helper()
	var got map[string]string
	require.Eventually(t, func() bool {
		cur, err := m.CurrentMembers()
		if err != nil {
			return false
		}
		got = map[string]string{}
		for id, p := range cur {
			got[id] = string(p)
		}
		return assert.ObjectsAreEqual(want, got)
	}, 20*time.Second, 20*time.Millisecond, "members seen by %s: %v, want %v", m.ID(), got, want)
}

// Three members see each other with their payloads; a payload change is seen; a member
// that leaves is gone from the others' lists; a member deleted by someone else is back.
func TestMembersSeeEachOther(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	c2 := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const g = "/services/orders"
	a := join(t, c1, g, "a", "pa")
	b := join(t, c2, g, "b", "pb")
	c := join(t, c2, g, "c", "pc")
	all := map[string]string{"a": "pa", "b": "pb", "c": "pc"}
	for _, m := range []*groupmember.Member{a, b, c} {
		waitMembers(t, m, all)
	}
	require.NoError(t, b.SetThisData(ctx, []byte("pb2")))
	all["b"] = "pb2"
	waitMembers(t, a, all)

	require.NoError(t, c.Close())
	delete(all, "c")
	waitMembers(t, a, all)

	require.NoError(t, c1.Delete(ctx, g+"/b"))
	for { // until b is back: the watch, not a's cache (which may not have seen it go yet)
		st, w, err := c1.ExistsW(ctx, g+"/b")
		require.NoError(t, err)
		if st != nil {
			break
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			t.Fatal("b is not back")
		}
	}
	data, _, err := c1.GetData(ctx, g+"/b")
	require.NoError(t, err)
	assert.Equal(t, "pb2", string(data), "b is back with its payload")
	waitMembers(t, a, all)
	assert.Equal(t, []string{"a", "b"}, slices.Sorted(slices.Values(testutil.Children(t, srv.ConnectString(), g))))
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), g)
}

// A member whose session expired is back in the group once its client has a new session.
func TestMemberBackAfterExpiry(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	cx := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	const g = "/services/expiry"
	x := join(t, cx, g, "x", "px")
	a := join(t, c1, g, "a", "pa")
	waitMembers(t, a, map[string]string{"a": "pa", "x": "px"})
	sid := cx.SessionID()
	proxy.Stall()
	require.Eventually(t, func() bool {
		sessions, err := zktest.Sessions(srv.Addr())
		return err == nil && !slices.Contains(sessions, sid)
	}, 30*time.Second, 50*time.Millisecond, "the server must expire session 0x%x", sid)
	waitMembers(t, a, map[string]string{"a": "pa"})
	proxy.Heal()
	waitMembers(t, a, map[string]string{"a": "pa", "x": "px"})
	waitMembers(t, x, map[string]string{"a": "pa", "x": "px"})
	require.NoError(t, x.Close())
	require.NoError(t, a.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), g)
}

// Start fails (its context ends before the group is read): the member must not be left
// in the group, joined in the background while the caller was told it failed.
func TestStartFailsLeavesNoMember(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	m, err := groupmember.New(c, "/services/failed", "a", nil)
	require.NoError(t, err)
	defer m.Close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, m.Start(cctx), context.Canceled)
	assert.ErrorIs(t, m.WaitForInitialCreate(ctx), groupmember.ErrClosed, "the member joined although Start failed")
	require.NoError(t, m.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), "/services/failed")
}

// A member whose node someone makes unreadable to the member's client and then deletes
// joins the group again: its node is "kept in place by a persistentnode.Node (created
// again when it is deleted or the session is lost)". ZooKeeper sends no event on a node to
// a client that may not read it.
func TestMemberNodeMadeUnreadableThenDeletedIsCreatedAgain(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("other:pw")))
	ctx := testutil.Context(t, 60*time.Second)
	const group = "/gacl"
	m, err := groupmember.New(c, group, "a", []byte("pa"))
	require.NoError(t, err)
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Close() })
	t.Cleanup(func() { _ = other.Delete(ctx, group, framework.WithChildren(), framework.Quietly()) })
	require.NoError(t, m.WaitForInitialCreate(ctx))
	path := group + "/a"
	_, old, err := other.GetData(ctx, path)
	require.NoError(t, err)

	_, err = other.SetACL(ctx, path, zk.DigestACL(zk.PermAll, "other", "pw"), -1)
	require.NoError(t, err)
	require.NoError(t, other.Delete(ctx, path))
	var st *framework.Stat
	require.Eventually(t, func() bool {
		st, err = other.Exists(ctx, path)
		return err == nil && st != nil
	}, 25*time.Second, 20*time.Millisecond, "the member's node was not created again within 25 s of its deletion")
	assert.Greater(t, st.Czxid, old.Czxid)
}
