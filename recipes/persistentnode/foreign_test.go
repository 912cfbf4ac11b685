package persistentnode_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// warnSignal is a slog handler that closes ch at the first record with message msg.
type warnSignal struct {
	msg  string
	once *sync.Once
	ch   chan struct{}
}

func (h warnSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h warnSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	return nil
}
func (h warnSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnSignal) WithGroup(string) slog.Handler      { return h }

// TestForeignReadOnlyNodeDeletedIsRecreated: a foreign node the Node cannot write
// (read-only ACL) is kept; once its owner deletes it, the Node must make its own (Curator
// watches the node in every case). The delete waits until the Node's write was refused.
func TestForeignReadOnlyNodeDeletedIsRecreated(t *testing.T) {
	srv := zktest.NewServer(t)
	refused := make(chan struct{})
	logger := slog.New(warnSignal{msg: "persistent node not in place", once: new(sync.Once), ch: refused})
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithLogger(logger))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	_, err := other.Create(ctx, "/pn/ro", []byte("theirs"), framework.WithParents(), framework.WithNodeACL(zk.WorldACL(zk.PermRead|zk.PermDelete|zk.PermCreate)))
	require.NoError(t, err)
	n, err := persistentnode.New(c, "/pn/ro", []byte("mine"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	created := make(chan persistentnode.Created, 8)
	n.AddListener(func(e persistentnode.Created) { created <- e })
	require.NoError(t, n.Start())
	defer n.Close()
	require.NoError(t, n.WaitForInitialCreate(ctx))
	testutil.WaitClosed(t, refused, 20*time.Second, "the Node's write refused")
	require.NoError(t, other.Delete(ctx, "/pn/ro"))
	select {
	case e := <-created:
		require.Equal(t, persistentnode.Created{Path: "/pn/ro", Recreated: true}, e)
	case <-time.After(20 * time.Second):
		t.Fatal("the foreign node was deleted and the Node never made its own (no watch after the failed write)")
	}
}

// A foreign node whose ACL the Node cannot read (no READ, no ADMIN for it) is not
// provably its own: it is kept (the first creation is done), and Close leaves it. Reading
// the owner token must not make the Node fail on it.
func TestForeignUnreadableNodeKept(t *testing.T) {
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	_, err := other.Create(ctx, "/pn/unreadable", []byte("theirs"), framework.WithParents(), framework.WithNodeACL(zk.WorldACL(zk.PermDelete|zk.PermCreate)))
	require.NoError(t, err)
	n, err := persistentnode.New(c, "/pn/unreadable", []byte("mine"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	defer n.Close()
	require.NoError(t, n.WaitForInitialCreate(ctx))
	require.NoError(t, n.Close())
	st, err := other.Exists(ctx, "/pn/unreadable")
	require.NoError(t, err)
	require.NotNil(t, st, "Close deleted a node it could not prove its own")
	require.NoError(t, other.Delete(ctx, "/pn/unreadable"))
}
