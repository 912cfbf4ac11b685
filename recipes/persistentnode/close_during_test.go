package persistentnode_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// waitChildren polls the parent (through a client of its own) until it has a child.
func waitChildren(t *testing.T, connect, parent string, d time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if kids := testutil.Children(t, connect, parent); len(kids) > 0 {
			return kids
		}
		if time.Now().After(deadline) {
			t.Fatalf("no child of %s within %v", parent, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close during the first create of a protected node (the server applied it, its reply
// is held): doc.go promises that Close gives the create up, waits for its answer and then
// looks for the node it may have made (by its name), so that a late create cannot leave
// the node behind. When Close returns, the node must be gone, as it is for an unprotected
// node (TestCloseDuringCreate). Whether Close returns while the reply is still held, or
// only after it is let through, the node must not be there once Close returned.
func TestCloseDuringProtectedCreateLeavesNoNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode framework.CreateMode
	}{
		{"persistent-protected", framework.Persistent},
		{"persistent-sequential-protected", framework.PersistentSequential},
		{"ephemeral-protected", framework.Ephemeral},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
			other := testutil.ConnectFailFast(t, srv.ConnectString())
			ctx := testutil.Context(t, 60*time.Second)
			require.NoError(t, other.EnsurePath(ctx, "/pn/pclose"))
			n, err := persistentnode.New(c, "/pn/pclose/node-", []byte("x"),
				persistentnode.WithMode(tc.mode), persistentnode.WithProtection())
			require.NoError(t, err)
			proxy.HoldReplies()
			defer proxy.Heal()
			require.NoError(t, n.Start())
			made := waitChildren(t, srv.ConnectString(), "/pn/pclose", 10*time.Second) // the create was applied; its reply is held
			require.Len(t, made, 1)

			closed := make(chan error, 1)
			go func() { closed <- n.Close() }()
			select {
			case err := <-closed:
				// Close returned while the create's reply is still held.
				require.NoError(t, err)
				assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/pn/pclose"),
					"Close returned while the node its given-up create made is still there")
				proxy.Heal()
			case <-time.After(2 * time.Second):
				proxy.Heal() // Close waits for the create: let its answer through
				require.NoError(t, testutil.Result(t, closed, 30*time.Second, "Close"))
				assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/pn/pclose"),
					"the node made by the create Close gave up on is left after Close returned")
			}
			require.NoError(t, c.WaitGuaranteedDeletes(ctx))
		})
	}
}

// Close while the connection is stalled: the Node's own node (made and known) cannot be
// deleted now. A protected node's delete is handed to the guaranteed deleter and goes
// once the connection is back; a node owned by the Node's token (unprotected) must not be
// left for good either: its identity (the token, its czxid) is known, and the REFERENCE's
// guaranteed delete hands a delete that failed for a connection-class reason to the
// background. Once the connection is back and WaitGuaranteedDeletes returned, the node
// must be gone.
func TestCloseDuringOutageLeavesNoNode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		protected bool
	}{
		{"persistent", false},
		{"persistent-protected", true}, // control: passes
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(60*time.Second))
			ctx := testutil.Context(t, 120*time.Second)
			opts := []persistentnode.Option{persistentnode.WithMode(framework.Persistent)}
			if tc.protected {
				opts = append(opts, persistentnode.WithProtection())
			}
			n, created := start(t, c, "/pn/outage/node", []byte("x"), opts...)
			waitCreated(t, created, 10*time.Second)
			proxy.Stall()
			closeErr := n.Close()
			t.Logf("Close during the outage: %v", closeErr)
			proxy.Heal()
			require.NoError(t, c.WaitGuaranteedDeletes(ctx))
			assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/pn/outage"),
				"the Node's own node is left for good after a Close during an outage")
		})
	}
}
