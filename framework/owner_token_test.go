package framework_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A create WithOwnerToken whose reply is lost, in every mode, with and without a
// namespace, with an ACL given to the client, and with the parent still to be made:
// exactly one node, returned as created, carrying the token and the client's ACL.
func TestOwnedCreateThroughLostReplyInEveryMode(t *testing.T) {
	modes := map[framework.CreateMode]string{
		framework.Persistent: "persistent", framework.PersistentSequential: "persistent-seq",
		framework.Ephemeral: "ephemeral", framework.EphemeralSequential: "ephemeral-seq",
		framework.Container: "container", framework.PersistentWithTTL: "ttl",
		framework.PersistentSequentialWithTTL: "ttl-seq",
	}
	srv := zktest.NewServer(t)
	for _, ns := range []string{"", "ns"} {
		for _, parentMissing := range []bool{false, true} {
			for m, name := range modes {
				t.Run(fmt.Sprintf("%s/ns=%q/parentMissing=%v", name, ns, parentMissing), func(t *testing.T) {
					leakcheck.Check(t)
					proxy := zktest.NewProxy(t, srv.ConnectString())
					acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "world", ID: "anyone"}}
					opts := []framework.Option{framework.WithACL(acl)}
					if ns != "" {
						opts = append(opts, framework.WithNamespace(ns))
					}
					c := testutil.ConnectFailFast(t, proxy.ConnectString(), opts...)
					ctx := testCtx(t)
					parent := fmt.Sprintf("/own%d%v", m, parentMissing)
					if ns != "" {
						parent += "ns"
					}
					if !parentMissing {
						require.NoError(t, c.EnsurePath(ctx, parent))
					} else {
						_, err := c.Exists(ctx, "/") // the namespace is made before the drop
						require.NoError(t, err)
					}
					copts := []framework.CreateOption{framework.WithMode(m)}
					if parentMissing {
						copts = append(copts, framework.WithParents())
					}
					if m == framework.PersistentWithTTL || m == framework.PersistentSequentialWithTTL {
						copts = append(copts, framework.WithTTL(time.Minute))
					}
					tok := framework.NewOwnerToken()
					copts = append(copts, framework.WithOwnerToken(tok))
					proxy.DropNextCreateReply()
					p, st, err := c.CreateStat(ctx, parent+"/n-", []byte("me"), copts...)
					require.NoError(t, err)
					require.NotNil(t, st)
					kids, _, err := c.Children(ctx, parent)
					require.NoError(t, err)
					require.Len(t, kids, 1, "exactly one node")
					assert.Equal(t, parent+"/"+kids[0], p)
					assert.True(t, strings.HasPrefix(kids[0], "n-"))
					st2, mine, err := c.OwnedBy(ctx, p, tok)
					require.NoError(t, err)
					require.NotNil(t, st2)
					assert.True(t, mine)
					assert.Equal(t, st.Czxid, st2.Czxid)
					gotACL, _, err := c.GetACL(ctx, p)
					require.NoError(t, err)
					assert.Contains(t, gotACL, acl[0])
					assert.Contains(t, gotACL, tok.ACL())
					owned, err := c.FindOwned(ctx, parent+"/n-", tok)
					require.NoError(t, err)
					if m == framework.PersistentSequential || m == framework.EphemeralSequential || m == framework.PersistentSequentialWithTTL {
						assert.Equal(t, []string{p}, owned)
					}
				})
			}
		}
	}
}

// Names are reused; identities are not (REFERENCE). A sequential create the caller gave
// up on (its context ended while the reply was held) is undone when its late reply
// arrives: the framework deletes the path the reply names. Meanwhile that node was
// deleted, the parent deleted and made again, and another client's sequential create got
// the same name (the parent's counter restarted). The late undo must not delete the
// other client's node: it is not the node this create made (another czxid).
func TestLateSequentialUndoSparesReusedName(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	deletes := make(chan struct{}, 16)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
		framework.WithRequestHook(func(op string) {
			if op == "delete" {
				select {
				case deletes <- struct{}{}:
				default:
				}
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/reuse"))

	proxy.HoldReplies()
	defer proxy.Heal()
	cctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() {
		_, err := c.Create(cctx, "/reuse/n-", []byte("mine"), framework.WithMode(framework.PersistentSequential))
		res <- err
	}()
	// The create was applied (its reply is held).
	for {
		kids, _, err := other.Children(ctx, "/reuse")
		require.NoError(t, err)
		if len(kids) == 1 {
			require.Equal(t, "n-0000000000", kids[0])
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	require.ErrorIs(t, testutil.Result(t, res, 10*time.Second, "the create given up on"), context.Canceled)

	// The name is reused: the node goes, the parent is made again, another client's
	// sequential create gets the same name.
	require.NoError(t, other.Delete(ctx, "/reuse/n-0000000000"))
	require.NoError(t, other.Delete(ctx, "/reuse"))
	require.NoError(t, other.EnsurePath(ctx, "/reuse"))
	p, st, err := other.CreateStat(ctx, "/reuse/n-", []byte("theirs"), framework.WithMode(framework.PersistentSequential))
	require.NoError(t, err)
	require.Equal(t, "/reuse/n-0000000000", p)

	proxy.Heal() // the late reply arrives: the framework undoes the create
	select {
	case <-deletes:
	case <-time.After(5 * time.Second):
	}
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	now, err := other.Exists(ctx, "/reuse/n-0000000000")
	require.NoError(t, err)
	require.NotNil(t, now, "the late undo of a given-up create deleted another client's node that reused its name")
	assert.Equal(t, st.Czxid, now.Czxid)
}

// nilACL is an ACL provider that gives no ACL (a provider's bug, or a path it does not
// cover).
type nilACL struct{}

func (nilACL) ACLForPath(string) []zk.ACL { return nil }

// An ACL provider that gives no ACL: ZooKeeper refuses the create (InvalidACL), and must
// refuse it just the same WithOwnerToken. The token is meant to change nothing but add
// its entry; with it, the create succeeds and makes a node whose only ACL entry is the
// token's: no one can read it, write it or read its ACL (not even its owner, which then
// cannot prove it its own).
func TestOwnerTokenDoesNotHideEmptyACL(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithACLProvider(nilACL{}))
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/noacl-control", nil)
	require.ErrorIs(t, err, zk.ErrInvalidACL, "control: no ACL, no token")
	tok := framework.NewOwnerToken()
	_, err = c.Create(ctx, "/noacl", nil, framework.WithOwnerToken(tok))
	if err == nil {
		_, _, aerr := c.OwnedBy(ctx, "/noacl", tok)
		t.Logf("OwnedBy on the node made: %v", aerr)
	}
	require.ErrorIs(t, err, zk.ErrInvalidACL, "a create WithOwnerToken with no ACL made a node no one can read")
}

// The client's ACL gives it neither READ nor ADMIN on the nodes it makes (write-only:
// CREATE, WRITE, DELETE): it cannot read its own nodes' ACL. A sequential create
// WithOwnerToken whose reply is lost must not make a second node: a child it cannot read
// the ACL of may be the one its first attempt made (its own ACL refuses the read), so
// NoAuth does not prove "not ours" here. Either one node, or an error that says the
// outcome is unknown; never two nodes from one create.
func TestOwnedSequentialCreateWithWriteOnlyACLThroughLostReplyMakesOneNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	writeOnly := []zk.ACL{{Perms: zk.PermCreate | zk.PermWrite | zk.PermDelete, Scheme: "world", ID: "anyone"}}
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/wo"))
	proxy.DropNextCreateReply()
	p, err := c.Create(ctx, "/wo/n-", nil, framework.WithMode(framework.PersistentSequential),
		framework.WithNodeACL(writeOnly), framework.WithOwnerToken(framework.NewOwnerToken()))
	t.Logf("create: %q, %v", p, err)
	require.Equal(t, 2, proxy.Accepted(), "the create's connection was dropped")
	kids, err2 := zktest.Children(ctx, srv.ConnectString(), "/wo")
	require.NoError(t, err2)
	assert.Len(t, kids, 1, "one create WithOwnerToken made two nodes (the lost attempt's is left)")
	if err != nil {
		assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
	}
}
