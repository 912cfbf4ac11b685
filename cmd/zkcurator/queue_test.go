package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestQueueUsage(t *testing.T) {
	cases := []struct {
		args []string
		out  string
	}{
		{[]string{"queue"}, "queue: missing subcommand"},
		{[]string{"queue", "put", "/q"}, "queue put: missing <data>"},
		{[]string{"queue", "put", "q", "x"}, "bad path"},
		{[]string{"queue", "put", "/q", "x", "--priority", "1", "--id", "a"}, "exclude each other"},
		{[]string{"queue", "put", "/q", "x", "--priority", "2147483648"}, "fits in 32 bits"},
		{[]string{"queue", "put", "/q", "x", "--delay", "-1s"}, "--delay must not be negative"},
		{[]string{"queue", "take", "/q", "--kind", "fifo"}, "--kind must be one of"},
		{[]string{"queue", "take", "/q", "--timeout", "-1s"}, "--timeout must not be negative"},
		{[]string{"queue", "take", "/q", "--lock-path", "locks"}, "bad --lock-path"},
		{[]string{"queue", "list", "/zookeeper"}, "cannot be used"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			p := zkc(t, "127.0.0.1:1", c.args...)
			assert.Equal(t, 2, p.code)
			assert.Contains(t, p.stderr.String(), c.out)
		})
	}
	p := zkc(t, "127.0.0.1:1", "help", "queue", "take")
	assert.Equal(t, 0, p.code)
	assert.Contains(t, p.stdout.String(), "Usage: zkcurator queue put")
}

func TestQueue(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	const path = "/cli/queue"
	p := zkc(t, c, "queue", "list", path)
	assert.Equal(t, 1, p.code)
	assert.Contains(t, p.stderr.String(), "no queue there")

	assert.True(t, strings.HasPrefix(out(t, c, "queue", "put", path, "first job"), path+"/queue-"))
	out(t, c, "queue", "put", path, "second")
	lines := strings.Split(out(t, c, "queue", "list", path), "\n")
	assert.Len(t, lines, 2)
	assert.True(t, strings.HasSuffix(lines[0], " first job"), lines[0])
	assert.Equal(t, "first job", out(t, c, "queue", "take", path, "--lock-path", "/cli/queue-locks"))
	assert.Equal(t, "second", out(t, c, "queue", "take", path))
	p = zkc(t, c, "queue", "take", path, "--timeout", "200ms")
	assert.Equal(t, 75, p.code, "nothing to take: %s", p.stderr)

	const prio = "/cli/prio"
	out(t, c, "queue", "put", prio, "low", "--priority", "9")
	out(t, c, "queue", "put", prio, "urgent", "--priority", "-1")
	assert.Equal(t, "urgent", out(t, c, "queue", "take", prio, "--kind", "priority"))
	assert.Equal(t, "low", out(t, c, "queue", "take", prio, "--kind", "priority"))
}

// A put that fails (here: an item over the packet limit) exits 1 with the error, and
// prints no node. Run in-process: an argument that large cannot be passed to a process.
func TestQueuePutFailureReported(t *testing.T) {
	srv := zktest.NewServer(t)
	t.Setenv("ZK_CONNECT", srv.ConnectString())
	for _, kind := range [][]string{nil, {"--priority", "1"}, {"--delay", "1s"}, {"--id", "a"}} {
		args := append([]string{"queue", "put", "/cli/big", strings.Repeat("x", 2<<20)}, kind...)
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code := run(ctx, args, strings.NewReader(""), &stdout, &stderr)
		cancel()
		assert.Equal(t, 1, code, "%v: stderr %s", kind, stderr.String())
		assert.Empty(t, strings.TrimSpace(stdout.String()), "%v", kind)
	}
}

// queue put, take and list work on Curator's SimpleDistributedQueue with --kind simple:
// one node qn-<seq> per item holding the item's bytes as they are.
func TestQueueSimple(t *testing.T) {
	srv := zktest.NewServer(t)
	c := srv.ConnectString()
	const path = "/cli/simple"
	node := out(t, c, "queue", "put", path, "first job", "--kind", "simple")
	assert.True(t, strings.HasPrefix(node, path+"/qn-"), node)
	out(t, c, "queue", "put", "--kind", "simple", path, "second")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kids, err := zktest.Children(ctx, c, path)
	require.NoError(t, err)
	assert.Len(t, kids, 2)
	conn, err := zktest.Dial(ctx, c, 10*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	data, _, err := conn.Get(node)
	require.NoError(t, err)
	assert.Equal(t, "first job", string(data), "the item's bytes as they are, as Curator's")

	lines := strings.Split(out(t, c, "queue", "list", path, "--kind", "simple"), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, node+" first job", path+"/"+lines[0])
	assert.True(t, strings.HasSuffix(lines[1], " second"), lines[1])
	assert.Equal(t, "first job", out(t, c, "queue", "take", path, "--kind", "simple"))
	assert.Equal(t, "second", out(t, c, "queue", "take", path, "--kind", "simple"))
	p := zkc(t, c, "queue", "take", path, "--kind", "simple", "--timeout", "200ms")
	assert.Equal(t, 75, p.code, "nothing to take: %s", p.stderr)
	p = zkc(t, c, "queue", "list", path, "--kind", "simple")
	assert.Empty(t, p.stdout.String())
	if p.code == 0 { // the queue's path is a container: the server deletes it soon after
		assert.Contains(t, p.stderr.String(), path+" is empty")
	} else {
		assert.Equal(t, 1, p.code)
		assert.Contains(t, p.stderr.String(), path+": no queue there")
	}

	// Listed as another kind, a simple queue's items are not the kind's: say so.
	out(t, c, "queue", "put", path, "third", "--kind", "simple")
	p = zkc(t, c, "queue", "list", path)
	assert.Equal(t, 0, p.code)
	assert.Empty(t, p.stdout.String())
	assert.Contains(t, p.stderr.String(), path+" has no plain items; it has 1 qn- node (a simple queue: --kind simple)")

	for _, args := range [][]string{
		{"queue", "put", path, "x", "--kind", "simple", "--priority", "1"},
		{"queue", "put", path, "x", "--kind", "fifo"},
		{"queue", "take", path, "--kind", "simple", "--lock-path", "/cli/locks"},
	} {
		p := zkc(t, "127.0.0.1:1", args...)
		assert.Equal(t, 2, p.code, "%q: %s", args, p.stderr)
	}
}

// queue list on a lock's path says that the path holds a lock's nodes, not that the
// queue is empty, and exits 1.
func TestQueueListOnLockPathSaysSo(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	m, err := mutex.New(c, "/cli/lockq")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)

	for _, kind := range []string{"plain", "simple"} {
		p := zkc(t, srv.ConnectString(), "queue", "list", "/cli/lockq", "--kind", kind)
		assert.Equal(t, 1, p.code, kind)
		assert.Contains(t, p.stderr.String(), "/cli/lockq is not a queue: it holds a lock's nodes, not queue items: try 'zkcurator lock holders /cli/lockq'", kind)
		assert.NotContains(t, p.stderr.String(), "empty", kind)
	}
	require.NoError(t, lease.Release(ctx))
}
