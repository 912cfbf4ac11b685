package wire_test

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// Every create mode answers with the node's Stat, including containers and TTL nodes
// (zktest's servers enable extended types). The server shows a client the ephemeral
// owner of ephemeral nodes only, so the kind of a container or a TTL node shows when the
// server reaps it: a container once its last child is gone, a TTL node once its TTL has
// passed without a change.
func TestCreateReturnsStatForEveryMode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{})
	sid := c.Session().ID
	const ttl = 90 * time.Second
	seq := regexp.MustCompile(`^/p-\d{10}$`)
	tests := []struct {
		mode  wire.CreateMode
		owner int64
		seq   bool
	}{
		{wire.ModePersistent, 0, false},
		{wire.ModeEphemeral, sid, false},
		{wire.ModePersistentSequential, 0, true},
		{wire.ModeEphemeralSequential, sid, true},
		{wire.ModeContainer, 0, false},
		{wire.ModePersistentWithTTL, 0, false},
		{wire.ModePersistentSequentialWithTTL, 0, true},
	}
	for _, tt := range tests {
		path := "/p-"
		if !tt.seq {
			path = "/m" + string(rune('0'+tt.mode))
		}
		rep, err := c.Create(ctx, path, []byte("data"), openACL, tt.mode, ttl)
		require.NoError(t, err, "mode %d", tt.mode)
		if tt.seq {
			assert.Regexp(t, seq, rep.Path, "mode %d", tt.mode)
		} else {
			assert.Equal(t, path, rep.Path)
		}
		require.NotNil(t, rep.Stat, "mode %d", tt.mode)
		assert.Equal(t, rep.Zxid, rep.Stat.Czxid, "mode %d", tt.mode)
		assert.Equal(t, int32(4), rep.Stat.DataLength, "mode %d", tt.mode)
		assert.Equal(t, tt.owner, rep.Stat.EphemeralOwner, "mode %d: %#x", tt.mode, rep.Stat.EphemeralOwner)
		st, err := c.Exists(ctx, rep.Path, false)
		require.NoError(t, err)
		assert.Equal(t, *rep.Stat, *st.Stat, "mode %d", tt.mode)
	}

	// The container goes once it had a child and has none; the TTL node after its TTL.
	_, err := c.Create(ctx, "/m4/child", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.Delete(ctx, "/m4/child", -1)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/short", nil, openACL, wire.ModePersistentWithTTL, 500*time.Millisecond)
	require.NoError(t, err)
	waitGone(t, c, "/m4")
	waitGone(t, c, "/short")
	_, err = c.Exists(ctx, "/m0", false)
	require.NoError(t, err, "a persistent node stays")

	_, err = c.Create(ctx, "/m0", nil, openACL, wire.ModePersistent, 0)
	assert.ErrorIs(t, err, zk.ErrNodeExists)
	_, err = c.Create(ctx, "no-slash", nil, openACL, wire.ModePersistent, 0)
	assert.ErrorIs(t, err, zk.ErrBadArguments)
	_, err = c.Create(ctx, "/nottl", nil, openACL, wire.ModePersistentWithTTL, 0)
	assert.ErrorIs(t, err, zk.ErrBadArguments, "a TTL node needs a TTL")
	_, err = c.Create(ctx, "/m1/child", nil, openACL, wire.ModePersistent, 0)
	assert.ErrorIs(t, err, zk.ErrNoChildrenForEphemerals)
}

func TestRequestsReadAndWriteNodes(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{})
	_, err := c.Create(ctx, "/a", []byte("1"), openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	for _, child := range []string{"/a/x", "/a/y", "/a/y/z"} {
		_, err := c.Create(ctx, child, nil, openACL, wire.ModePersistent, 0)
		require.NoError(t, err)
	}

	set, err := c.SetData(ctx, "/a", []byte("2"), 0)
	require.NoError(t, err)
	assert.Equal(t, int32(1), set.Stat.Version)
	assert.Equal(t, set.Zxid, set.Stat.Mzxid)
	_, err = c.SetData(ctx, "/a", []byte("3"), 0)
	assert.ErrorIs(t, err, zk.ErrBadVersion)

	kids, err := c.GetChildren(ctx, "/a", false)
	require.NoError(t, err)
	sort.Strings(kids.Children)
	assert.Equal(t, []string{"x", "y"}, kids.Children)
	assert.Equal(t, int32(2), kids.Stat.NumChildren)
	n, err := c.GetAllChildrenNumber(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, int32(3), n.Count)

	_, err = c.Delete(ctx, "/a", -1)
	assert.ErrorIs(t, err, zk.ErrNotEmpty)
	_, err = c.Delete(ctx, "/a/x", 5)
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	del, err := c.Delete(ctx, "/a/x", 0)
	require.NoError(t, err)
	assert.Greater(t, del.Zxid, set.Zxid)

	acl, err := c.GetACL(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, openACL, acl.ACL)
	readOnly := zk.WorldACL(zk.PermRead)
	sa, err := c.SetACL(ctx, "/a", readOnly, 0)
	require.NoError(t, err)
	assert.Equal(t, int32(1), sa.Stat.Aversion)
	_, err = c.SetData(ctx, "/a", nil, -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth)

	sync, err := c.Sync(ctx, "/a")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, sync.Zxid, sa.Zxid)
}

func TestMultiAppliesAllOrNone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{})
	_, err := c.Create(ctx, "/old", []byte("o"), openACL, wire.ModePersistent, 0)
	require.NoError(t, err)

	rep, err := c.Multi(ctx,
		wire.CreateOp{Path: "/new", Data: []byte("n"), ACL: openACL, Mode: wire.ModeEphemeral},
		wire.CreateOp{Path: "/box", ACL: openACL, Mode: wire.ModeContainer},
		wire.CreateOp{Path: "/ttl", ACL: openACL, Mode: wire.ModePersistentWithTTL, TTL: time.Minute},
		wire.CheckOp{Path: "/old", Version: 0},
		wire.SetDataOp{Path: "/old", Data: []byte("p"), Version: 0},
		wire.DeleteOp{Path: "/old", Version: 1},
	)
	require.NoError(t, err)
	require.Len(t, rep.Results, 6)
	// ZooKeeper 3.8 answers a plain create in a multi without its Stat (as a create, not
	// a create2); containers and TTL nodes come with theirs.
	assert.Equal(t, "/new", rep.Results[0].Path)
	if st := rep.Results[0].Stat; st != nil {
		assert.Equal(t, c.Session().ID, st.EphemeralOwner)
	}
	assert.Equal(t, "/box", rep.Results[1].Path)
	require.NotNil(t, rep.Results[1].Stat)
	assert.Equal(t, rep.Zxid, rep.Results[1].Stat.Czxid, "one transaction, the reply's zxid")
	assert.Equal(t, "/ttl", rep.Results[2].Path)
	require.NotNil(t, rep.Results[2].Stat)
	assert.Equal(t, rep.Zxid, rep.Results[2].Stat.Mzxid)
	st, err := c.Exists(ctx, "/new", false)
	require.NoError(t, err)
	assert.Equal(t, c.Session().ID, st.Stat.EphemeralOwner)
	assert.Equal(t, int32(1), rep.Results[4].Stat.Version)
	for i, r := range rep.Results {
		assert.NoError(t, r.Err, "op %d", i)
	}

	// A failing check: nothing applied, the first failure named, the others rolled back.
	rep, err = c.Multi(ctx,
		wire.CreateOp{Path: "/never", ACL: openACL},
		wire.CheckOp{Path: "/new", Version: 7},
		wire.DeleteOp{Path: "/new", Version: -1},
	)
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	assert.ErrorContains(t, err, "multi operation 1")
	require.Len(t, rep.Results, 3)
	assert.ErrorIs(t, rep.Results[0].Err, wire.ErrRolledBack)
	assert.ErrorIs(t, rep.Results[1].Err, zk.ErrBadVersion)
	var we *wire.Error
	if assert.ErrorAs(t, rep.Results[2].Err, &we) {
		assert.Equal(t, wire.CodeRuntimeInconsistency, we.Code, "ops after the failure are not run")
	}
	_, err = c.Exists(ctx, "/never", false)
	assert.ErrorIs(t, err, zk.ErrNoNode)
	_, err = c.Exists(ctx, "/new", false)
	assert.NoError(t, err)
}

func TestMultiReadReturnsEachResult(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := dial(t, srv.Addr(), wire.Config{})
	_, err := c.Create(ctx, "/r", []byte("v"), openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/r/k", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)

	rep, err := c.MultiRead(ctx, wire.GetDataOp{Path: "/r"}, wire.GetChildrenOp{Path: "/r"}, wire.GetDataOp{Path: "/missing"}, wire.GetChildrenOp{Path: "/r/k"})
	require.NoError(t, err)
	require.Len(t, rep.Results, 4)
	assert.Equal(t, []byte("v"), rep.Results[0].Data)
	assert.Equal(t, int32(1), rep.Results[0].Stat.NumChildren)
	assert.Equal(t, []string{"k"}, rep.Results[1].Children)
	assert.ErrorIs(t, rep.Results[2].Err, zk.ErrNoNode)
	assert.NoError(t, rep.Results[3].Err)
	assert.Empty(t, rep.Results[3].Children)
}

// A persistent recursive watch fires for every change below its path and stays set; a
// persistent one fires for the node and its children's list; removeWatches ends them.
func TestAddWatchFiresUntilRemoved(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	ev := newEvents()
	c := dial(t, srv.Addr(), wire.Config{OnEvent: ev.on})
	other := dial(t, srv.Addr(), wire.Config{})

	_, err := c.AddWatch(ctx, "/rec", wire.AddWatchPersistentRecursive)
	require.NoError(t, err)
	_, err = c.AddWatch(ctx, "/per", wire.AddWatchPersistent)
	require.NoError(t, err)
	// ZooKeeper 3.8 knows the watcher types Children, Data and Any only (Persistent and
	// PersistentRecursive came with 3.9): a persistent watch is a data and a child watch.
	_, err = c.CheckWatches(ctx, "/rec", wire.WatcherAny)
	require.NoError(t, err)
	_, err = c.CheckWatches(ctx, "/per", wire.WatcherChildren)
	require.NoError(t, err)
	_, err = c.CheckWatches(ctx, "/unwatched", wire.WatcherAny)
	assertNoWatcher(t, err)

	for _, p := range []string{"/rec", "/rec/a", "/rec/a/b", "/per", "/per/c"} {
		_, err := other.Create(ctx, p, nil, openACL, wire.ModePersistent, 0)
		require.NoError(t, err)
	}
	_, err = other.SetData(ctx, "/rec/a/b", []byte("x"), -1)
	require.NoError(t, err)
	_, err = other.SetData(ctx, "/rec/a/b", []byte("y"), -1)
	require.NoError(t, err)
	_, err = other.Delete(ctx, "/per/c", -1)
	require.NoError(t, err)

	want := []wire.Event{
		{Type: zk.EventNodeCreated, Path: "/rec"},
		{Type: zk.EventNodeCreated, Path: "/rec/a"},
		{Type: zk.EventNodeCreated, Path: "/rec/a/b"},
		{Type: zk.EventNodeCreated, Path: "/per"},
		{Type: zk.EventNodeChildrenChanged, Path: "/per"},
		{Type: zk.EventNodeDataChanged, Path: "/rec/a/b"},
		{Type: zk.EventNodeDataChanged, Path: "/rec/a/b"},
		{Type: zk.EventNodeChildrenChanged, Path: "/per"},
	}
	for i, w := range want {
		e := ev.next(t)
		assert.Equal(t, w.Type, e.Type, "event %d: %+v", i, e)
		assert.Equal(t, w.Path, e.Path, "event %d: %+v", i, e)
		assert.Equal(t, zk.StateSyncConnected, e.State)
	}

	_, err = c.RemoveWatches(ctx, "/rec", wire.WatcherAny)
	require.NoError(t, err)
	_, err = c.CheckWatches(ctx, "/rec", wire.WatcherAny)
	assertNoWatcher(t, err)
	_, err = c.RemoveWatches(ctx, "/rec", wire.WatcherAny)
	assertNoWatcher(t, err)
	_, err = other.SetData(ctx, "/rec/a", []byte("z"), -1)
	require.NoError(t, err)
	_, err = c.Sync(ctx, "/rec") // the reply comes after any event of the setData
	require.NoError(t, err)
	ev.none(t)
}

func assertNoWatcher(t *testing.T, err error) {
	t.Helper()
	var we *wire.Error
	if assert.ErrorAs(t, err, &we) {
		assert.Equal(t, wire.CodeNoWatcher, we.Code)
	}
}

// digestID is the id of a digest ACL for user:password.
func digestID(user, password string) string {
	h := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// The server holds credentials per connection: Config.Auth sends them again on a resumed
// session, and WhoAmI lists them.
func TestAuthIsSentAgainOnResumedSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	creds := wire.Auth{Scheme: "digest", Auth: []byte("alice:secret")}
	c1 := dial(t, srv.Addr(), wire.Config{Auth: []wire.Auth{creds}})
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: digestID("alice", "secret")}}
	_, err := c1.Create(ctx, "/private", []byte("s"), acl, wire.ModePersistent, 0)
	require.NoError(t, err)
	who, err := c1.WhoAmI(ctx)
	require.NoError(t, err)
	assert.Contains(t, who.Clients, wire.ClientInfo{AuthScheme: "digest", User: "alice"})
	assert.Contains(t, who.Clients, wire.ClientInfo{AuthScheme: "ip", User: "127.0.0.1"})
	s := c1.Session()
	require.NoError(t, c1.Close())

	bare := dial(t, srv.Addr(), wire.Config{Session: s, LastZxid: c1.LastZxid()})
	_, err = bare.GetData(ctx, "/private", false)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "a resumed session without Auth has none")
	require.NoError(t, bare.AddAuth(ctx, creds))
	_, err = bare.GetData(ctx, "/private", false)
	require.NoError(t, err, "AddAuth adds it")
	require.NoError(t, bare.Close())

	c2 := dial(t, srv.Addr(), wire.Config{Session: s, LastZxid: bare.LastZxid(), Auth: []wire.Auth{creds}})
	got, err := c2.GetData(ctx, "/private", false)
	require.NoError(t, err)
	assert.Equal(t, []byte("s"), got.Data)
	assert.Equal(t, s.ID, c2.Session().ID)
}

// Config.Watches sets the watches again on a resumed session, and the server fires at
// once those whose nodes changed while the client was away.
func TestWatchesAreSetAgainOnResumedSession(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c1 := dial(t, srv.Addr(), wire.Config{})
	other := dial(t, srv.Addr(), wire.Config{})
	for _, p := range []string{"/d", "/k", "/rec"} {
		_, err := other.Create(ctx, p, nil, openACL, wire.ModePersistent, 0)
		require.NoError(t, err)
	}
	_, err := c1.GetData(ctx, "/d", true)
	require.NoError(t, err)
	s, last := c1.Session(), c1.LastZxid()
	require.NoError(t, c1.Close())

	// While away: /d changes, /e is created, /k gets a child.
	_, err = other.SetData(ctx, "/d", []byte("1"), -1)
	require.NoError(t, err)
	_, err = other.Create(ctx, "/e", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = other.Create(ctx, "/k/c", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)

	ev := newEvents()
	c2 := dial(t, srv.Addr(), wire.Config{
		Session: s, LastZxid: last, OnEvent: ev.on,
		Watches: wire.Watches{Data: []string{"/d"}, Exist: []string{"/e"}, Child: []string{"/k"}, PersistentRecursive: []string{"/rec"}},
	})
	got := map[string]zk.EventType{}
	for range 3 {
		e := ev.next(t)
		got[e.Path] = e.Type
	}
	assert.Equal(t, map[string]zk.EventType{"/d": zk.EventNodeDataChanged, "/e": zk.EventNodeCreated, "/k": zk.EventNodeChildrenChanged}, got)

	// The persistent recursive watch was set again too.
	_, err = c2.CheckWatches(ctx, "/rec", wire.WatcherAny)
	require.NoError(t, err)
	_, err = other.Create(ctx, "/rec/x", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	e := ev.next(t)
	assert.Equal(t, wire.Event{Type: zk.EventNodeCreated, State: zk.StateSyncConnected, Path: "/rec/x", Zxid: e.Zxid}, e)
}

// With a chroot, paths sent get it and paths received lose it.
func TestChrootPrefixesAndStripsPaths(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	root := dial(t, srv.Addr(), wire.Config{})
	_, err := root.Create(ctx, "/app", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	_, err = root.Create(ctx, "/app2", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)

	ev := newEvents()
	c := dial(t, srv.Addr(), wire.Config{Chroot: "/app", OnEvent: ev.on})
	rep, err := c.Create(ctx, "/s-", nil, openACL, wire.ModeEphemeralSequential, 0)
	require.NoError(t, err)
	assert.Regexp(t, `^/s-\d{10}$`, rep.Path)
	_, err = root.Exists(ctx, "/app"+rep.Path, false)
	require.NoError(t, err)

	// An ephemeral of the same session outside the chroot, in a sibling with the same
	// prefix, is not listed.
	_, err = c.Multi(ctx, wire.CreateOp{Path: "/m", ACL: openACL, Mode: wire.ModeEphemeral})
	require.NoError(t, err)
	eph, err := c.GetEphemerals(ctx, "/")
	require.NoError(t, err)
	sort.Strings(eph.Paths)
	assert.Equal(t, []string{"/m", rep.Path}, eph.Paths)

	st, err := c.Exists(ctx, "/", true)
	require.NoError(t, err)
	assert.NotNil(t, st.Stat)
	_, err = c.AddWatch(ctx, "/", wire.AddWatchPersistentRecursive)
	require.NoError(t, err)
	_, err = root.SetData(ctx, "/app", []byte("x"), -1)
	require.NoError(t, err)
	e := ev.next(t) // one for the exists watch and the persistent one: the server sends one a connection
	assert.Equal(t, "/", e.Path)
	assert.Equal(t, zk.EventNodeDataChanged, e.Type)
	_, err = root.Create(ctx, "/app/child", nil, openACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	e = ev.next(t)
	assert.Equal(t, "/child", e.Path)

	_, err = wire.Dial(ctx, srv.Addr(), wire.Config{Chroot: "app/"})
	assert.Error(t, err)
	assert.False(t, errors.Is(err, wire.ErrSessionExpired))
}

// A credential of a scheme the server has no provider for is refused, and the server
// then closes the connection.
func TestAuthRefusedFailsWithAuthFailed(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	_, err := wire.Dial(ctx, srv.Addr(), wire.Config{Auth: []wire.Auth{{Scheme: "nosuch", Auth: []byte("x")}}})
	assert.ErrorIs(t, err, zk.ErrAuthFailed)

	c := dial(t, srv.Addr(), wire.Config{})
	err = c.AddAuth(ctx, wire.Auth{Scheme: "nosuch", Auth: []byte("x")})
	assert.ErrorIs(t, err, zk.ErrAuthFailed)
	select {
	case <-c.Done():
		assert.ErrorIs(t, c.Err(), wire.ErrConnectionLost)
	case <-time.After(wait):
		t.Fatal("the server kept the connection")
	}
}
