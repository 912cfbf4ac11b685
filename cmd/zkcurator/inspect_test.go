package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// rawOut runs zkcurator and requires exit status 0; it returns stdout.
func rawOut(t *testing.T, connect string, args ...string) string {
	t.Helper()
	p := zkc(t, connect, args...)
	require.Equal(t, 0, p.code, "zkcurator %v: %s", args, p.stderr)
	return p.stdout.String()
}

func TestLsGetStatRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	c := testutil.Connect(t, zkConnect)
	ctx := testutil.Context(t, 60*time.Second)
	for _, n := range [][2]string{{"/r", ""}, {"/r/b", "two\nlines"}, {"/r/a", "one"}, {"/r/a/x", ""}, {"/r/bin", "\xff\x01"}} {
		_, err := c.Create(ctx, n[0], []byte(n[1]))
		require.NoError(t, err)
	}

	assert.Equal(t, "a\nb\nbin\n", rawOut(t, zkConnect, "ls", "/r"))
	assert.Equal(t, "/r/a\n/r/a/x\n/r/b\n/r/bin\n", rawOut(t, zkConnect, "ls", "-R", "/r"))
	var ls struct {
		Path        string   `json:"path"`
		Children    []string `json:"children"`
		Descendants []string `json:"descendants"`
	}
	require.NoError(t, json.Unmarshal([]byte(rawOut(t, zkConnect, "ls", "/r", "--json")), &ls))
	assert.Equal(t, []string{"a", "b", "bin"}, ls.Children)
	require.NoError(t, json.Unmarshal([]byte(rawOut(t, zkConnect, "ls", "-R", "--json", "/r/a")), &ls))
	assert.Equal(t, []string{"/r/a/x"}, ls.Descendants)
	assert.JSONEq(t, `{"path": "/r/a/x", "children": []}`, rawOut(t, zkConnect, "ls", "/r/a/x", "--json"), "no children is an empty list")

	assert.Equal(t, "one\n", rawOut(t, zkConnect, "get", "/r/a"))
	assert.Equal(t, "two\nlines\n", rawOut(t, zkConnect, "get", "/r/b"))
	assert.Equal(t, `"\xff\x01"`+"\n", rawOut(t, zkConnect, "get", "/r/bin"), "binary data is Go-quoted")
	assert.Empty(t, rawOut(t, zkConnect, "get", "/r"))
	var got struct {
		Data, Encoding string
		Stat           statJSON
	}
	require.NoError(t, json.Unmarshal([]byte(rawOut(t, zkConnect, "get", "--json", "/r/bin")), &got))
	assert.Equal(t, "/wE=", got.Data)
	assert.Equal(t, "base64", got.Encoding)
	assert.EqualValues(t, 2, got.Stat.DataLength)

	eph, err := c.Create(ctx, "/r/lock-0000000001", []byte("me"), framework.WithMode(framework.Ephemeral))
	require.NoError(t, err)
	out := rawOut(t, zkConnect, "stat", eph)
	assert.Regexp(t, `(?m)^ephemeralOwner  0x[0-9a-f]+$`, out)
	assert.Contains(t, out, "mode            ephemeral\n")
	assert.Contains(t, out, "dataLength      2\n")
	assert.Contains(t, out, "recipe          lock node\n")
	var st statJSON
	require.NoError(t, json.Unmarshal([]byte(rawOut(t, zkConnect, "stat", "/r", "--json")), &st))
	assert.EqualValues(t, 4, st.NumChildren)
	assert.Equal(t, "persistent", st.Mode)
	assert.Equal(t, "0x0", st.EphemeralOwner)
	assert.Equal(t, "/r", st.Path)

	assert.Contains(t, rawOut(t, zkConnect, "tree"), "\n    a  (1 child, 3 bytes)\n      x\n", "tree's path is / by default")
	assert.Contains(t, rawOut(t, zkConnect, "tree", "--json"), `"path": "/r/a/x"`)

	require.NoError(t, c.Delete(ctx, "/r", framework.WithChildren()))
}

// tree names the recipe nodes it recognises: a lock's, a leader latch's, a semaphore's
// lease, a queue's item and a service instance.
func TestTreeNamesRecipeNodes(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	c := testutil.Connect(t, zkConnect)
	ctx := testutil.Context(t, 60*time.Second)

	m, err := mutex.New(c, "/t/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	latch, err := leader.NewLatch(c, "/t/latch", "me")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	require.NoError(t, latch.Await(ctx))
	sem, err := semaphore.New(c, "/t/sem", 2)
	require.NoError(t, err)
	semLease, err := sem.Acquire(ctx)
	require.NoError(t, err)
	q, err := queue.New(c, "/t/queue", queue.Bytes{})
	require.NoError(t, err)
	item, err := q.Put(ctx, []byte("job"))
	require.NoError(t, err)
	d, err := discovery.New[json.RawMessage](c, "/t/services")
	require.NoError(t, err)
	inst, err := discovery.NewInstance[json.RawMessage]("orders", nil, discovery.WithPort(8080))
	require.NoError(t, err)
	require.NoError(t, d.Register(ctx, inst))

	for _, p := range []string{"/t/plain", "/t/plain/locks"} { // a child named locks: no semaphore
		_, err = c.Create(ctx, p, nil)
		require.NoError(t, err)
	}

	var nodes []treeNode
	require.NoError(t, json.Unmarshal([]byte(rawOut(t, zkConnect, "tree", "/t", "--json")), &nodes))
	recipe := map[string]string{}
	for _, n := range nodes {
		recipe[n.Path] = n.Recipe
	}
	assert.Equal(t, "lock node", recipe[lease.Node()])
	assert.Equal(t, lockKind.String(), recipe["/t/lock"])
	assert.Equal(t, "leader latch node", recipe[latch.Node()], "%v", recipe)
	assert.Equal(t, "semaphore lease", recipe[semLease.Node()])
	assert.Equal(t, semaphoreKind.String(), recipe["/t/sem"])
	assert.Equal(t, "queue item", recipe[item])
	assert.Equal(t, "service instance of orders", recipe["/t/services/orders/"+inst.ID])
	assert.Equal(t, "", recipe["/t/plain"], "a node with a locks child is not a semaphore by that alone")
	assert.Contains(t, recipe, "/t/plain/locks")
	assert.Equal(t, "/t", nodes[0].Path)

	text := rawOut(t, zkConnect, "tree", "/t")
	assert.Contains(t, text, "\n  lock  (1 child)  lock (")
	assert.Regexp(t, `\n    _c_[0-9a-f-]{36}-lock-0000000000  \([0-9]+ bytes, ephemeral, session 0x[0-9a-f]+\)  lock node\n`, text)
	assert.Contains(t, text, "  service instance of orders\n")
	assert.Regexp(t, `^/t  \(6 children\)\n`, text)

	require.NoError(t, d.Close())
	require.NoError(t, semLease.Release(ctx))
	require.NoError(t, latch.Close())
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, c.Delete(ctx, "/t", framework.WithChildren()))
}

// A path that does not exist exits 4, one the client may not read 5, a bad path 2.
func TestReadCommandsSayWhyTheyFail(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	ctx := testutil.Context(t, 60*time.Second)
	alice := testutil.Connect(t, zkConnect, framework.WithAuth("digest", []byte("alice:secret")))
	_, err := alice.Create(ctx, "/open", nil)
	require.NoError(t, err)
	_, err = alice.Create(ctx, "/open/secret", []byte("hidden"), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "alice", "secret")))
	require.NoError(t, err)
	_, err = alice.Create(ctx, "/open/secret/inner", nil)
	require.NoError(t, err)

	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"ls", "/missing"}, exitNoNode, "/missing does not exist"},
		{[]string{"get", "/missing"}, exitNoNode, "/missing does not exist"},
		{[]string{"stat", "/missing"}, exitNoNode, "/missing does not exist"},
		{[]string{"tree", "/missing"}, exitNoNode, "/missing does not exist"},
		{[]string{"ls", "-R", "/missing"}, exitNoNode, "/missing does not exist"},
		{[]string{"ls", "/open/secret"}, exitNoAuth, "/open/secret: no permission to read it"},
		{[]string{"get", "/open/secret"}, exitNoAuth, "/open/secret: no permission to read it"},
		{[]string{"tree", "/open/secret"}, exitNoAuth, "/open/secret: no permission to read it"},
		{[]string{"ls", "-R", "/open"}, exitNoAuth, "/open/secret: no permission to list its children"},
		{[]string{"tree", "/open"}, exitNoAuth, "1 node could not be listed: no permission"},
		{[]string{"get", "open"}, exitUsage, "get: bad path"},
		{[]string{"ls", "/a//b"}, exitUsage, "ls: bad path"},
		{[]string{"stat", "/a/"}, exitUsage, "stat: bad path"},
		{[]string{"tree", "/a/./b"}, exitUsage, "tree: bad path"},
		{[]string{"get"}, exitUsage, "get: missing <path>"},
		{[]string{"ls", "/a", "/b"}, exitUsage, "unexpected arguments"},
	} {
		p := zkc(t, zkConnect, tc.args...)
		assert.Equal(t, tc.code, p.code, "%v: %s", tc.args, p.stderr)
		assert.Contains(t, p.stderr.String(), tc.says, "%v", tc.args)
	}
	// stat needs no permission; tree shows the node it may not list.
	assert.Contains(t, rawOut(t, zkConnect, "stat", "/open/secret"), "numChildren     1\n")
	p := zkc(t, zkConnect, "tree", "/open")
	assert.Equal(t, "/open  (1 child)\n  secret  (1 child, 6 bytes, no permission to read it)\n", p.stdout.String())

	require.NoError(t, alice.Delete(ctx, "/open", framework.WithChildren()))
	st, err := alice.Exists(ctx, "/open")
	require.NoError(t, err)
	require.Nil(t, st)
}

// TestGetSaysWhatRecipeNodeItIs checks that get prints the data of a node it recognises
// (a queue item, a counter, a shared count, a lock's path) as it is, and says on stderr
// (with --json, in the recipe and readWith fields) what it is and which command reads
// it; a plain node gets no such line.
func TestGetSaysWhatRecipeNodeItIs(t *testing.T) {
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	c := testutil.Connect(t, zkConnect)
	ctx := testutil.Context(t, 60*time.Second)

	put := zkc(t, zkConnect, "queue", "put", "/g/jobs", "rebuild index")
	require.Equal(t, 0, put.code, "%s", put.stderr)
	items, _, err := c.Children(ctx, "/g/jobs")
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, "", out(t, zkConnect, "counter", "set", "/g/done", "3"))
	require.Equal(t, "", out(t, zkConnect, "sharedcount", "set", "/g/workers", "8"))
	m, err := mutex.New(c, "/g/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = lease.Release(ctx) }()
	_, err = c.Create(ctx, "/g/plain", []byte("\x00\x01\x02"))
	require.NoError(t, err)

	for _, tc := range []struct{ path, says string }{
		{"/g/jobs/" + items[0], "zkcurator: /g/jobs/" + items[0] + ": a queue item; 'zkcurator queue list /g/jobs' reads it\n"},
		{"/g/done", "zkcurator: /g/done: 8 bytes in a counter's format (Curator's DistributedAtomicLong); 'zkcurator counter get /g/done' reads it\n"},
		{"/g/workers", "zkcurator: /g/workers: 4 bytes in a shared count's format (Curator's SharedCount; or a counter's, --int); 'zkcurator sharedcount get /g/workers' reads it\n"},
		{"/g/lock", "zkcurator: /g/lock: a lock (lock- nodes: a mutex or a leader selector); 'zkcurator lock holders /g/lock' reads it\n"},
		{lease.Node(), "'zkcurator lock holders /g/lock' reads it\n"},
	} {
		p := zkc(t, zkConnect, "get", tc.path)
		assert.Equal(t, 0, p.code, "%s: %s", tc.path, p.stderr)
		assert.Contains(t, p.stderr.String(), tc.says, tc.path)
	}
	p := zkc(t, zkConnect, "get", "/g/done")
	assert.Equal(t, `"\x00\x00\x00\x00\x00\x00\x00\x03"`+"\n", p.stdout.String(), "the data is printed as before")
	p = zkc(t, zkConnect, "get", "/g/plain")
	assert.Equal(t, 0, p.code)
	assert.Empty(t, p.stderr.String(), "a plain node gets no hint")

	var got struct {
		Recipe, ReadWith string
	}
	require.NoError(t, json.Unmarshal([]byte(rawOut(t, zkConnect, "get", "--json", "/g/done")), &got))
	assert.Equal(t, "8 bytes in a counter's format (Curator's DistributedAtomicLong)", got.Recipe)
	assert.Equal(t, "zkcurator counter get /g/done", got.ReadWith)
	p = zkc(t, zkConnect, "get", "--json", "/g/plain")
	assert.Empty(t, p.stderr.String())
	assert.NotContains(t, p.stdout.String(), "recipe")
}
