package zktest_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// A server with SASL users takes ACLs of scheme sasl (its SASL provider is registered)
// and enforces them on a client without SASL; such a client is served as before. (That
// a SASL client gets in is the business of wire's tests, which speak DIGEST-MD5.)
func TestSASLServerEnforcesSASLACLs(t *testing.T) {
	srv := zktest.NewSASLServer(t, map[string]string{"bob": "bobsecret", "alice": "x-y.z"})
	assert.FileExists(t, filepath.Join(srv.Dir(), "jaas.conf"))
	conn, _ := connect(t, srv.ConnectString(), 10*time.Second, nil)
	_, err := conn.Create("/bob", []byte("b"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "bob"}})
	require.NoError(t, err, "a server without the SASL provider answers InvalidACL")
	_, _, err = conn.Get("/bob")
	assert.ErrorIs(t, err, zk.ErrNoAuth)
	_, _, err = conn.Get("/")
	assert.NoError(t, err)
}

// The users are checked before anything starts: the JAAS file could not carry them.
func TestWithSASLDigestUsersRefusesWhatJAASCannotCarry(t *testing.T) {
	for _, users := range []map[string]string{
		nil,
		{"": "p"},
		{"bo b": "p"},
		{"bob=": "p"},
		{"bob": `a"b`},
		{"bob": `a\b`},
		{"bob": "${user.home}"},
		{"bob": "line\nbreak"},
	} {
		srv, err := zktest.StartStandalone(context.Background(), zktest.WithSASLDigestUsers(users))
		if !assert.Error(t, err, "%q", users) {
			srv.Close()
		}
		_, err = zktest.StartEnsemble(3, zktest.WithEnsembleSASLDigestUsers(users))
		assert.Error(t, err, "%q", users)
	}
	_, err := zktest.StartStandalone(context.Background(), zktest.UseServers("127.0.0.1:1"),
		zktest.WithSASLDigestUsers(map[string]string{"bob": "p"}))
	assert.Error(t, err, "a server named by UseServers cannot be given users")
}
