package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// zkcStdin runs zkcurator to its end with stdin as its standard input and returns its
// exit status, stdout and stderr.
func zkcStdin(t *testing.T, connect, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "ZK_CONNECT="+connect)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, stdout.String(), stderr.String()
}

func TestWriteUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"create"}, "create: missing <path>"},
		{[]string{"create", "w"}, "create: bad path"},
		{[]string{"create", "/"}, "cannot be used"},
		{[]string{"create", "/zookeeper/x"}, "cannot be used"},
		{[]string{"create", "/w", "d", "more"}, "unexpected arguments"},
		{[]string{"create", "/w", "-e"}, "an ephemeral node goes with zkcurator's session"},
		{[]string{"create", "/w", "--ephemeral"}, "'zkcurator group join"},
		{[]string{"create", "/w", "--container", "--sequential"}, "--container goes with neither"},
		{[]string{"create", "/w", "-c", "--ttl", "1s"}, "--container goes with neither"},
		{[]string{"create", "/w", "--ttl", "-1s"}, "--ttl must not be negative"},
		{[]string{"create", "/w", "--ttl", "1us"}, "at least 1ms"},
		{[]string{"set", "/w"}, "set: missing <data>"},
		{[]string{"set", "/w", "d", "--version", "-1"}, "want a node version"},
		{[]string{"set", "/w", "d", "-v", "x"}, "want a node version"},
		{[]string{"set", "w", "d"}, "set: bad path"},
		{[]string{"delete"}, "delete: missing <path>"},
		{[]string{"delete", "/"}, "cannot be used"},
		{[]string{"delete", "/w", "--version", "2147483648"}, "want a node version"},
		{[]string{"delete", "/w/"}, "delete: bad path"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := zkc(t, "127.0.0.1:1", c.args...)
			assert.Equal(t, 2, p.code)
			assert.Contains(t, p.stderr.String(), c.out)
			assert.Contains(t, p.stderr.String(), "Run 'zkcurator help "+c.args[0]+"' for usage.")
		})
	}
	p := zkc(t, "127.0.0.1:1", "help", "set")
	assert.Equal(t, 0, p.code)
	assert.Contains(t, p.stdout.String(), "Usage: zkcurator create <path>")
}

// TestCreateSetDelete writes plain nodes as zkCli does: create (with parents, a
// container, a sequential and a TTL node, data from stdin), set (compare-and-set with
// --version) and delete, and checks each exit status a script acts on: 6 the node
// exists, 4 no node (create: no parent), 3 another version, 5 no permission.
func TestCreateSetDelete(t *testing.T) {
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	ctx := testutil.Context(t, 60*time.Second)
	conn, err := zktest.Dial(ctx, zkConnect, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	data := func(p string) (string, *zk.Stat) {
		t.Helper()
		b, st, err := conn.Get(p)
		require.NoError(t, err)
		return string(b), st
	}

	// create
	assert.Equal(t, "", out(t, zkConnect, "create", "/w"))
	assert.Equal(t, "", out(t, zkConnect, "create", "/w/a", "hello"))
	got, _ := data("/w/a")
	assert.Equal(t, "hello", got)
	p := zkc(t, zkConnect, "create", "/w/a", "again")
	assert.Equal(t, 6, p.code)
	assert.Contains(t, p.stderr.String(), "/w/a exists already: nothing written")
	got, _ = data("/w/a")
	assert.Equal(t, "hello", got)
	p = zkc(t, zkConnect, "create", "/w/x/y", "z")
	assert.Equal(t, 4, p.code)
	assert.Contains(t, p.stderr.String(), "the parent /w/x does not exist (--parents makes it)")
	assert.Equal(t, "", out(t, zkConnect, "create", "-p", "/w/x/y", "z"))
	got, _ = data("/w/x/y")
	assert.Equal(t, "z", got)
	assert.Equal(t, "/seq/item-0000000000", out(t, zkConnect, "create", "/seq/item-", "--sequential", "--parents"))
	assert.Equal(t, "/seq/item-0000000001", out(t, zkConnect, "create", "-s", "/seq/item-", "one"))
	assert.Equal(t, "", out(t, zkConnect, "create", "/w/box", "--container"))
	assert.Equal(t, "", out(t, zkConnect, "create", "/w/ttl", "--ttl", "1h"))
	for _, n := range []string{"/w/box", "/w/ttl"} {
		ok, _, err := conn.Exists(n)
		require.NoError(t, err)
		assert.True(t, ok, n)
	}
	code, stdout, stderr := zkcStdin(t, zkConnect, "from\x00stdin\n", "create", "/w/in", "-")
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	got, _ = data("/w/in")
	assert.Equal(t, "from\x00stdin\n", got, "stdin's bytes as they are")
	assert.Equal(t, "", out(t, zkConnect, "create", "/w/empty"))
	got, _ = data("/w/empty")
	assert.Equal(t, "", got)

	// set
	assert.Equal(t, "", out(t, zkConnect, "set", "/w/a", "bye"))
	got, st := data("/w/a")
	assert.Equal(t, "bye", got)
	p = zkc(t, zkConnect, "set", "/w/a", "lost", "--version", "7")
	assert.Equal(t, 3, p.code)
	assert.Contains(t, p.stderr.String(), "not set: the node is at version 1, not 7")
	got, _ = data("/w/a")
	assert.Equal(t, "bye", got, "a compare-and-set that did not match writes nothing")
	assert.Equal(t, "", out(t, zkConnect, "set", "/w/a", "cas", "-v", "1"))
	got, st2 := data("/w/a")
	assert.Equal(t, "cas", got)
	assert.Equal(t, st.Version+1, st2.Version)
	code, _, stderr = zkcStdin(t, zkConnect, "piped", "set", "/w/a", "-")
	assert.Equal(t, 0, code, stderr)
	got, _ = data("/w/a")
	assert.Equal(t, "piped", got)
	p = zkc(t, zkConnect, "set", "/w/missing", "x")
	assert.Equal(t, 4, p.code)
	assert.Contains(t, p.stderr.String(), "/w/missing does not exist (zkcurator create makes it)")
	p = zkc(t, zkConnect, "set", "/w/missing", "x", "--force")
	assert.Equal(t, 4, p.code, "--force does not create the node")

	// delete
	p = zkc(t, zkConnect, "delete", "/w/a", "--version", "0")
	assert.Equal(t, 3, p.code)
	assert.Contains(t, p.stderr.String(), "not deleted: the node is at version 3, not 0")
	assert.Equal(t, "", out(t, zkConnect, "delete", "/w/a", "--version", "3"))
	ok, _, err := conn.Exists("/w/a")
	require.NoError(t, err)
	assert.False(t, ok)
	p = zkc(t, zkConnect, "delete", "/w/a")
	assert.Equal(t, 4, p.code)
	assert.Contains(t, p.stderr.String(), "delete: /w/a does not exist")
	p = zkc(t, zkConnect, "delete", "/w/x")
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "not deleted: it has 1 child (delete deletes one node")
	assert.Equal(t, "", out(t, zkConnect, "delete", "/w/x/y"))
	assert.Equal(t, "", out(t, zkConnect, "delete", "/w/x"))

	// No permission: a node anyone may read but not write, nor make children under.
	_, err = conn.Create("/w/ro", []byte("r"), 0, zk.WorldACL(zk.PermRead))
	require.NoError(t, err)
	for _, args := range [][]string{
		{"set", "/w/ro", "x"}, {"set", "/w/ro", "x", "--force"}, {"create", "/w/ro/kid"},
	} {
		p = zkc(t, zkConnect, args...)
		assert.Equal(t, 5, p.code, "%q", args)
		assert.Contains(t, p.stderr.String(), "no permission", "%q", args)
	}
	got, _ = data("/w/ro")
	assert.Equal(t, "r", got)
}

// TestSetAndDeleteRefuseRecipeNodes checks that set does not overwrite a node a recipe
// reads (a counter's bytes, a queue item, a lock node; a lock's path it does) and delete does not delete a live
// holder's node (a lock node): each says what the node is and which command to use,
// exits 1 and leaves the node as it was; --force writes or deletes it.
func TestSetAndDeleteRefuseRecipeNodes(t *testing.T) {
	srv := zktest.NewServer(t)
	zkConnect := srv.ConnectString()
	c := testutil.Connect(t, zkConnect)
	ctx := testutil.Context(t, 60*time.Second)

	require.Equal(t, "", out(t, zkConnect, "counter", "set", "/r/done", "3"))
	require.Equal(t, 0, zkc(t, zkConnect, "queue", "put", "/r/jobs", "rebuild").code)
	items, _, err := c.Children(ctx, "/r/jobs")
	require.NoError(t, err)
	require.Len(t, items, 1)
	item := "/r/jobs/" + items[0]
	m, err := mutex.New(c, "/r/lock", mutex.WithNodeData([]byte("me")))
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = lease.Release(ctx) }()

	for _, tc := range []struct {
		path, says string
	}{
		{"/r/done", "set /r/done: 8 bytes in a counter's format (Curator's DistributedAtomicLong); 'zkcurator counter get /r/done' reads it: not overwritten (--force overwrites it)"},
		{item, "a queue item; 'zkcurator queue list /r/jobs' reads it: not overwritten"},
		{lease.Node(), "a lock node (a mutex's or a leader selector's); 'zkcurator lock holders /r/lock' reads it: not overwritten"},
	} {
		before, _, err := c.GetData(ctx, tc.path)
		require.NoError(t, err)
		p := zkc(t, zkConnect, "set", tc.path, "text")
		assert.Equal(t, 1, p.code, tc.path)
		assert.Contains(t, p.stderr.String(), tc.says, tc.path)
		after, _, err := c.GetData(ctx, tc.path)
		require.NoError(t, err)
		assert.Equal(t, before, after, "%s was written", tc.path)
	}
	assert.Equal(t, "", out(t, zkConnect, "set", "/r/lock", "the lock's path: no recipe reads its data"))
	assert.Equal(t, "", out(t, zkConnect, "set", "/r/done", "text", "--force"))
	got, _, err := c.GetData(ctx, "/r/done")
	require.NoError(t, err)
	assert.Equal(t, "text", string(got))

	// A live holder's node is not deleted; a queue item (nobody's) is.
	p := zkc(t, zkConnect, "delete", lease.Node())
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "a lock node (a mutex's or a leader selector's) held by the live session 0x")
	assert.Contains(t, p.stderr.String(), "'zkcurator lock revoke "+lease.Node()+"' asks a revocable holder to let go (--force deletes it)")
	st, err := c.Exists(ctx, lease.Node())
	require.NoError(t, err)
	assert.NotNil(t, st, "the holder's node was deleted")
	assert.Equal(t, "", out(t, zkConnect, "delete", item))
	assert.Equal(t, "", out(t, zkConnect, "delete", lease.Node(), "--force"))
	select {
	case <-lease.Done(): // the holder learns its node is gone
	case <-ctx.Done():
		t.Fatal("the lease did not end when its node was deleted")
	}
}
