package wire_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

var saslUsers = map[string]string{"bob": "bobsecret", "alice": "alicesecret"}

// bobsACL admits the SASL user bob only.
var bobsACL = []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "bob"}}

// A connection with bob's password is the sasl identity bob: whoAmI says so, and a node
// only bob may read is readable on it and on no other.
func TestDialSASLDigestAuthenticates(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewSASLServer(t, saslUsers)
	ctx := testCtx(t)
	bob := dial(t, srv.Addr(), wire.Config{SASL: &wire.SASLDigest{Username: "bob", Password: "bobsecret"},
		Auth: []wire.Auth{{Scheme: "digest", Auth: []byte("carol:pw")}}})
	who, err := bob.WhoAmI(ctx)
	require.NoError(t, err)
	assert.Contains(t, who.Clients, wire.ClientInfo{AuthScheme: "sasl", User: "bob"})
	assert.Contains(t, who.Clients, wire.ClientInfo{AuthScheme: "digest", User: "carol"}, "the auth packets go after SASL")
	_, err = bob.Create(ctx, "/bob", []byte("b"), bobsACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	got, err := bob.GetData(ctx, "/bob", false)
	require.NoError(t, err)
	assert.Equal(t, []byte("b"), got.Data)

	alice := dial(t, srv.Addr(), wire.Config{SASL: &wire.SASLDigest{Username: "alice", Password: "alicesecret"}})
	_, err = alice.GetData(ctx, "/bob", false)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "alice is not bob")
	stranger := dial(t, srv.Addr(), wire.Config{})
	_, err = stranger.GetData(ctx, "/bob", false)
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	who, err = stranger.WhoAmI(ctx)
	require.NoError(t, err)
	assert.NotContains(t, who.Clients, wire.ClientInfo{AuthScheme: "sasl", User: "bob"})
}

// A wrong password: the server refuses it (AuthFailed) and closes the connection; Dial
// fails with zk.ErrAuthFailed and leaves nothing behind. (An unknown user is not tried:
// ZooKeeper 3.8.0 checks one against the password of the last user its callback handler
// saw, ZOOKEEPER-4839, fixed in later releases.)
func TestDialSASLDigestRefused(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewSASLServer(t, saslUsers)
	for _, cred := range []wire.SASLDigest{{Username: "bob", Password: "wrong"}, {Username: "alice", Password: "bobsecret"}} {
		c, err := wire.Dial(testCtx(t), srv.Addr(), wire.Config{SASL: &cred})
		require.Error(t, err, "%+v", cred)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, zk.ErrAuthFailed)
		var we *wire.Error
		require.True(t, errors.As(err, &we), "%v", err)
		assert.Equal(t, int32(-115), we.Code)
	}
}

// A server without SASL users answers the first SASL packet with no challenge: no server
// so configured will take the credentials, which is a refusal.
func TestDialSASLDigestToServerWithoutSASL(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	_, err := wire.Dial(testCtx(t), srv.Addr(), wire.Config{SASL: &wire.SASLDigest{Username: "bob", Password: "bobsecret"}})
	assert.ErrorIs(t, err, zk.ErrAuthFailed)
}

// The Client authenticates every connection: after the proxy dropped the connection, the
// session's new one is bob's again, before any request.
func TestClientSendsSASLAgainAfterReconnection(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewSASLServer(t, saslUsers)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testCtx(t)
	c, ns := newClient(t, []string{proxy.ConnectString()}, wire.ClientConfig{SessionTimeout: 10 * time.Second,
		SASL: &wire.SASLDigest{Username: "bob", Password: "bobsecret"}})
	sid := c.Session().ID
	_, err := c.Create(ctx, "/bob", []byte("b"), bobsACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	stranger := dial(t, srv.Addr(), wire.Config{})
	_, err = stranger.GetData(ctx, "/bob", false)
	require.ErrorIs(t, err, zk.ErrNoAuth, "the ACL admits only bob")

	proxy.DropConnections()
	ns.state(t, zk.StateDisconnected)
	up := ns.state(t, zk.StateHasSession)
	assert.Equal(t, sid, up.Session)
	got, err := c.GetData(ctx, "/bob", false)
	require.NoError(t, err)
	assert.Equal(t, []byte("b"), got.Data)
	who, err := c.WhoAmI(ctx)
	require.NoError(t, err)
	assert.Contains(t, who.Clients, wire.ClientInfo{AuthScheme: "sasl", User: "bob"})
	assert.GreaterOrEqual(t, proxy.Accepted(), 2, "a second connection")
}

// A refused password ends the Client, as a refused Auth does: zk.StateAuthFailed, and
// every request fails with zk.ErrAuthFailed; Close leaves no goroutine.
func TestClientSASLRefusedEndsClient(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewSASLServer(t, saslUsers)
	hosts, err := wire.NewHostList([]string{srv.Addr()})
	require.NoError(t, err)
	ns := newNotices()
	c, err := wire.NewClient(wire.ClientConfig{Hosts: hosts, OnEvent: ns.on,
		SASL: &wire.SASLDigest{Username: "bob", Password: "wrong"}})
	require.NoError(t, err)
	defer c.Close()
	n := ns.state(t, zk.StateAuthFailed)
	assert.ErrorIs(t, n.Err, zk.ErrAuthFailed)
	assert.Equal(t, zk.StateAuthFailed, c.State())
	_, err = c.Exists(testCtx(t), "/", false)
	assert.ErrorIs(t, err, zk.ErrAuthFailed)
	require.NoError(t, c.Close())
	ns.state(t, wire.StateClosed)
}

// Every member of an ensemble started with the users takes them: a node bob made through
// one member is bob's to read through each.
func TestDialSASLDigestOnEveryMember(t *testing.T) {
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithEnsembleSASLDigestUsers(saslUsers))
	ctx := testCtx(t)
	cred := &wire.SASLDigest{Username: "bob", Password: "bobsecret"}
	first := dial(t, ens.Addr(0), wire.Config{SASL: cred})
	_, err := first.Create(ctx, "/bob", []byte("b"), bobsACL, wire.ModePersistent, 0)
	require.NoError(t, err)
	for i := range ens.Size() {
		c := dial(t, ens.Addr(i), wire.Config{SASL: cred})
		_, err := c.Sync(ctx, "/bob") // the member has the node
		require.NoError(t, err)
		got, err := c.GetData(ctx, "/bob", false)
		require.NoError(t, err, "member %d", i)
		assert.Equal(t, []byte("b"), got.Data)
		_, err = dial(t, ens.Addr(i), wire.Config{}).GetData(ctx, "/bob", false)
		assert.ErrorIs(t, err, zk.ErrNoAuth, "member %d without SASL", i)
	}
}
