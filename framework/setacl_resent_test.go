package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// ErrUnknownOutcome "is matched, together with the server's answer, by the error of a
// write that the client sent again after a connection loss and whose answer the first
// attempt may explain ... It is the one sentinel for 'may or may not have been applied'
// across the library". A versioned SetACL is such a write: applied, its answer lost, and
// sent again, it is answered BadVersion — by its own first attempt.
func TestSetACLResentOutcomeUnknown(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.Create(ctx, "/acl", nil)
	require.NoError(t, err)

	acl := append(zk.WorldACL(zk.PermAll), zk.ACL{Perms: zk.PermRead, Scheme: "digest", ID: "reader:xxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
	err = lostReply(t, proxy, func() error { _, err := c.SetACL(ctx, "/acl", acl, 0); return err })
	t.Logf("setACL at aclVersion 0, sent again after its answer was lost: %v", err)
	got, st, gerr := c.GetACL(ctx, "/acl")
	require.NoError(t, gerr)
	require.Len(t, got, 2, "the first attempt was applied")
	require.EqualValues(t, 1, st.Aversion)
	require.ErrorIs(t, err, framework.ErrBadVersion, "the resend met the version its first attempt made")
	assert.ErrorIs(t, err, framework.ErrUnknownOutcome, "a resend's BadVersion that the first attempt explains is an unknown outcome")
}
