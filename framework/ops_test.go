package framework_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
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

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateModesAndReads(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)

	p, err := c.Create(ctx, "/a/b/c", []byte("x"), framework.WithParents())
	require.NoError(t, err)
	assert.Equal(t, "/a/b/c", p)
	st, err := c.Exists(ctx, "/a")
	require.NoError(t, err)
	assert.NotNil(t, st)

	_, err = c.Create(ctx, "/a/b/c", []byte("x"))
	assert.ErrorIs(t, err, framework.ErrNodeExists)
	_, err = c.Create(ctx, "/a/b/c", []byte("x"), framework.Idempotent())
	assert.NoError(t, err, "same data: idempotent create succeeds")
	_, err = c.Create(ctx, "/a/b/c", []byte("y"), framework.Idempotent())
	assert.ErrorIs(t, err, framework.ErrNodeExists)
	_, err = c.Create(ctx, "/a/b/c", []byte("z"), framework.OrSetData())
	require.NoError(t, err)
	data, _, err := c.GetData(ctx, "/a/b/c")
	require.NoError(t, err)
	assert.Equal(t, "z", string(data))

	seq, st2, err := c.CreateStat(ctx, "/a/seq-", nil, framework.WithMode(framework.EphemeralSequential))
	require.NoError(t, err)
	assert.Regexp(t, `^/a/seq-\d{10}$`, seq)
	assert.Equal(t, c.SessionID(), st2.EphemeralOwner)
	assert.NotZero(t, st2.Czxid)

	_, err = c.Create(ctx, "/ttl", nil, framework.WithMode(framework.PersistentWithTTL), framework.WithTTL(time.Hour))
	require.NoError(t, err)
	_, err = c.Create(ctx, "/ttl2", nil, framework.WithMode(framework.PersistentWithTTL))
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = c.Create(ctx, "/box", nil, framework.WithMode(framework.Container))
	require.NoError(t, err)

	kids, _, err := c.Children(ctx, "/a")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"b", framework.NodeName(seq)}, kids)

	st, err = c.SetData(ctx, "/a/b/c", []byte("w"), 0)
	assert.ErrorIs(t, err, framework.ErrBadVersion)
	assert.Nil(t, st)
	_, err = c.SetData(ctx, "/a/b/c", []byte("w"), -1)
	require.NoError(t, err)

	// Watches.
	_, _, ch, err := c.GetDataW(ctx, "/a/b/c")
	require.NoError(t, err)
	_, err = c.SetData(ctx, "/a/b/c", []byte("v"), -1)
	require.NoError(t, err)
	select {
	case <-ch.Done():
		assert.Equal(t, zk.EventNodeDataChanged, ch.Event().Type)
	case <-time.After(5 * time.Second):
		t.Fatal("data watch did not fire")
	}
	st, ech, err := c.ExistsW(ctx, "/later")
	require.NoError(t, err)
	assert.Nil(t, st)
	_, _, cch, err := c.ChildrenW(ctx, "/a")
	require.NoError(t, err)
	_, err = c.Create(ctx, "/later", nil)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/a/new", nil)
	require.NoError(t, err)
	for _, w := range []*framework.Watch{ech, cch} {
		select {
		case <-w.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("watch did not fire")
		}
	}

	require.NoError(t, c.Sync(ctx, "/a"))
	err = c.Delete(ctx, "/a")
	assert.ErrorIs(t, err, framework.ErrNotEmpty)
	require.NoError(t, c.Delete(ctx, "/a", framework.WithChildren()))
	assert.ErrorIs(t, c.Delete(ctx, "/a"), framework.ErrNoNode)
	require.NoError(t, c.Delete(ctx, "/a", framework.Quietly()))
	assert.ErrorIs(t, c.Delete(ctx, "/later", framework.WithVersion(7)), framework.ErrBadVersion)
}

func TestTransaction(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("tx"))
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/"))
	res, err := c.Transaction(ctx,
		framework.CreateOp("/t", []byte("1"), framework.Persistent, nil),
		framework.CreateOp("/t/s-", nil, framework.PersistentSequential, nil),
		framework.SetDataOp("/t", []byte("2"), 0),
		framework.CheckOp("/t", 1))
	require.NoError(t, err)
	require.Len(t, res, 4)
	assert.Equal(t, "/t", res[0].Path)
	assert.Regexp(t, `^/t/s-\d{10}$`, res[1].Path)
	assert.EqualValues(t, 1, res[2].Stat.Version)

	// All or nothing.
	res, err = c.Transaction(ctx,
		framework.CreateOp("/u", nil, framework.Persistent, nil),
		framework.DeleteOp("/missing", -1))
	assert.ErrorIs(t, err, framework.ErrNoNode)
	require.Len(t, res, 2)
	assert.ErrorIs(t, res[1].Err, framework.ErrNoNode)
	st, err := c.Exists(ctx, "/u")
	require.NoError(t, err)
	assert.Nil(t, st, "a failed transaction applies nothing")
}

func TestNamespaceAndChroot(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString()+"/root", framework.WithNamespace("ns"))
	p, err := c.Create(ctx, "/x/y", []byte("d"), framework.WithParents())
	require.NoError(t, err)
	assert.Equal(t, "/x/y", p)
	p, err = c.Create(ctx, "/x/p-", nil, framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p, "/x/_c_"), p)

	plain := testutil.ConnectFailFast(t, srv.ConnectString())
	data, _, err := plain.GetData(ctx, "/root/ns/x/y")
	require.NoError(t, err)
	assert.Equal(t, "d", string(data))
	// The namespace node itself is persistent, parents below it are containers.
	st, err := plain.Exists(ctx, "/root/ns")
	require.NoError(t, err)
	require.NotNil(t, st)
}

func TestBadInputRejectedBeforeSending(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	rec := recordStates(c)
	ctx := testCtx(t)
	before := c.Requests()
	for _, p := range []string{"", "a", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\x00b", "/\u0001", "/\ue000", "/\U0001F600"} {
		_, err := c.Create(ctx, p, nil)
		var pe *framework.PathError
		assert.ErrorAs(t, err, &pe, "path %q", p)
		assert.ErrorIs(t, err, framework.ErrInvalidPath, "path %q", p)
		_, _, err = c.GetData(ctx, p)
		assert.ErrorIs(t, err, framework.ErrInvalidPath, "path %q", p)
	}
	big := bytes.Repeat([]byte("x"), framework.DefaultMaxPacketSize)
	_, err := c.Create(ctx, "/big", big)
	assert.ErrorIs(t, err, framework.ErrDataTooLarge)
	var tl *framework.DataTooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, "/big", tl.Path)
	_, err = c.SetData(ctx, "/big", big, -1)
	assert.ErrorIs(t, err, framework.ErrDataTooLarge)
	assert.Equal(t, before, c.Requests(), "nothing was sent")
	assert.Empty(t, rec.get(), "the connection was never dropped (and Connected came before the listener)")

	// Just under the limit goes through.
	ok := bytes.Repeat([]byte("x"), 1000*1000)
	_, err = c.Create(ctx, "/almost", ok)
	require.NoError(t, err)
}

func TestACLAndAuth(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	owner := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("alice:secret")),
		framework.WithACL(zk.DigestACL(zk.PermAll, "alice", "secret")))
	_, err := owner.Create(ctx, "/private", []byte("s"))
	require.NoError(t, err)
	acl, _, err := owner.GetACL(ctx, "/private")
	require.NoError(t, err)
	require.Len(t, acl, 1)
	assert.Equal(t, "digest", acl[0].Scheme)

	stranger := testutil.ConnectFailFast(t, srv.ConnectString())
	start := time.Now()
	_, _, err = stranger.GetData(ctx, "/private")
	assert.ErrorIs(t, err, framework.ErrNoAuth)
	assert.Less(t, time.Since(start), 2*time.Second, "no-auth is not retried")

	_, err = owner.SetACL(ctx, "/private", zk.WorldACL(zk.PermRead), -1)
	require.NoError(t, err)
	data, _, err := stranger.GetData(ctx, "/private")
	require.NoError(t, err)
	assert.Equal(t, "s", string(data))
}

func TestProtectedCreateThroughLostReply(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/locks"))

	proxy.DropNextCreateReply()
	p, st, err := c.CreateStat(ctx, "/locks/lock-", []byte("me"),
		framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
	require.NoError(t, err)
	assert.Equal(t, c.SessionID(), st.EphemeralOwner)
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/locks")
	require.NoError(t, err)
	require.Len(t, kids, 1, "exactly one node exists: %v", kids)
	assert.Equal(t, "/locks/"+kids[0], p, "the call returns the node its lost reply was about")
	assert.True(t, framework.IsProtectedName(kids[0]))
	assert.Regexp(t, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`, kids[0])
}

func TestUnprotectedCreateThroughLostReplyDuplicates(t *testing.T) {
	// The negative control of the test above: without protection the retry creates a
	// second node, which is why recipes use protection.
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/dup"))
	proxy.DropNextCreateReply()
	_, err := c.Create(ctx, "/dup/n-", nil, framework.WithMode(framework.EphemeralSequential))
	require.NoError(t, err)
	kids, err := zktest.Children(ctx, srv.ConnectString(), "/dup")
	require.NoError(t, err)
	assert.Len(t, kids, 2)
}

func TestGuaranteedDeleteWhileServerDown(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewLocalServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithConnectionTimeout(300*time.Millisecond))
	ctx := testCtx(t)
	_, err := c.Create(ctx, "/doomed", nil)
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = c.Delete(dctx, "/doomed", framework.Guaranteed())
	cancel()
	require.Error(t, err, "the delete cannot succeed while the server is down")
	require.NoError(t, srv.Restart(ctx))
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	st, err := c.Exists(ctx, "/doomed")
	require.NoError(t, err)
	assert.Nil(t, st, "the background worker deleted the node once the server was back")
}

func TestAbandonedCreateIsCleanedUp(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(10*time.Second))
	ctx := testCtx(t)
	require.NoError(t, c.EnsurePath(ctx, "/abandon"))
	proxy.StallFor(500 * time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := c.Create(cctx, "/abandon/n-", nil, framework.WithMode(framework.PersistentSequential))
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The request reaches the server after the stall; its node is deleted when the late
	// reply arrives.
	require.Eventually(t, func() bool {
		kids, err := zktest.Children(ctx, srv.ConnectString(), "/abandon")
		return err == nil && len(kids) == 0
	}, 10*time.Second, 100*time.Millisecond)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
}

// WithOnSend is called when the create request goes out, once per request sent; never
// for a create refused before sending.
func TestCreateOnSend(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString())
	ctx := testCtx(t)
	calls := 0
	onSend := framework.WithOnSend(func() { calls++ })
	_, err := c.Create(ctx, "/sent", nil, onSend)
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	calls = 0
	_, err = c.Create(ctx, "bad", nil, onSend)
	require.Error(t, err)
	assert.Zero(t, calls, "nothing is sent for an invalid path")
	require.NoError(t, c.EnsurePath(ctx, "/ghost"))
	proxy.DropNextCreateReply()
	_, err = c.Create(ctx, "/ghost/n-", nil, onSend, framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
	require.NoError(t, err)
	assert.Equal(t, 1, calls, "after the lost reply the protected node is found, not created again")
	kids, _, err := c.Children(ctx, "/ghost")
	require.NoError(t, err)
	assert.Len(t, kids, 1)
}

// WithResent says whether an attempt of the create may have been applied unanswered: a
// create whose reply was lost and whose node someone deleted before it was sent again
// succeeds, having been applied twice, and says so; a create sent twice only because its
// first send found no parent (WithOnSend counts two sends) does not.
func TestCreateWithResent(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	var (
		mu      sync.Mutex
		armed   bool
		creates int
		deleted error = errors.New("the resend was not seen")
	)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(func(op string) {
		mu.Lock()
		defer mu.Unlock()
		if !armed || op != "create" {
			return
		}
		if creates++; creates == 2 { // the resend, not sent yet: delete what the first made
			deleted = other.Delete(ctx, "/resent")
		}
	}))

	resent, sends := true, 0
	onSend := framework.WithOnSend(func() { sends++ })
	_, err := c.Create(ctx, "/missing/parent/n", nil, framework.WithContainerParents(), framework.WithResent(&resent), onSend)
	require.NoError(t, err)
	assert.Equal(t, 2, sends, "the create went out twice: before and after its parents were made")
	assert.False(t, resent, "a first send answered NoNode was not applied")

	mu.Lock()
	armed = true
	mu.Unlock()
	proxy.DropNextCreateReply()
	_, err = c.Create(ctx, "/resent", []byte("a"), framework.WithResent(&resent))
	mu.Lock()
	n, derr := creates, deleted
	mu.Unlock()
	require.Equal(t, 2, n, "the create was not sent again")
	require.NoError(t, derr, "the node the first attempt made was not deleted before the resend")
	require.NoError(t, err, "the resend made the node again")
	assert.True(t, resent, "a create applied twice (its reply lost, its node deleted, sent again) is not reported")

	mu.Lock()
	armed = false
	mu.Unlock()
	proxy.DropNextCreateReply()
	_, err = c.Create(ctx, "/resent2", nil, framework.WithResent(&resent))
	assert.ErrorIs(t, err, framework.ErrNodeExists)
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome)
	assert.True(t, resent)
	_, err = c.Create(ctx, "/once", nil, framework.WithResent(&resent))
	require.NoError(t, err)
	assert.False(t, resent)
}
