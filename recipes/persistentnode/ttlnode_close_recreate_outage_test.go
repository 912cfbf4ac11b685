package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// The package doc: "The server never reaps a container that never had one, so Close
// deletes a container of its own (its owner token) that never had a child: one made just
// before Close, whose child was refused, or made by a create of the container given up on
// by Close". TTLNode.Close: "unless a touch wrote the child into the container the
// TTLNode has, Close waits for the answer to any create of the container it gave up on,
// then looks at the container and deletes it when it carries this TTLNode's owner token
// and never had a child".
//
// The TTLNode's container (touched: it had a child) is deleted by someone else with its
// child. The TTLNode makes the container again; the server applies that create, its reply
// is lost with the connection, and the client cannot reconnect for a while. Close now:
// the TTLNode believes it still has the container its touch wrote a child into (the
// czxid of the old one), and leaves the new, childless container, which the server never
// reaps. Once the connection is back and the background clean-ups are done, no childless
// container of the TTLNode's may be left.
func TestTTLNodeCloseDuringOutageDeletesRecreatedChildlessContainer(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	t.Cleanup(proxy.Heal)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 120*time.Second)
	const path = "/pn/ttl-recreate-outage"
	tn, err := persistentnode.NewTTL(c, path, time.Minute, []byte("d"))
	require.NoError(t, err)
	require.NoError(t, tn.Start())
	t.Cleanup(func() { _ = tn.Close() })
	require.NoError(t, tn.WaitForInitialCreate(ctx)) // the child was touched
	first, err := other.Exists(ctx, path)
	require.NoError(t, err)
	require.NotNil(t, first)
	require.Positive(t, first.Cversion, "the container had a child")

	proxy.DropNextCreateReply()
	proxy.Refuse()
	_, err = other.Transaction(ctx, framework.DeleteOp(tn.ChildPath(), -1), framework.DeleteOp(path, -1))
	require.NoError(t, err)
	var again *framework.Stat
	require.Eventually(t, func() bool {
		again, err = other.Exists(ctx, path)
		return err == nil && again != nil
	}, 20*time.Second, 10*time.Millisecond, "the TTLNode did not make its container again")
	require.NotEqual(t, first.Czxid, again.Czxid)
	require.Zero(t, again.Cversion, "the new container never had a child")

	closeErr := tn.Close()
	t.Logf("Close during the outage: %v", closeErr)
	proxy.Heal()
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.NoError(t, c.Sync(ctx, path))
	time.Sleep(3 * time.Second) // the server's container reaper runs every second in zktest: it reaps none that never had a child
	left, err := other.Exists(ctx, path)
	require.NoError(t, err)
	if left != nil {
		t.Errorf("the TTLNode's re-created container (czxid %#x, cversion %d, %d children) is left after Close: the server never reaps it", left.Czxid, left.Cversion, left.NumChildren)
	}
}
