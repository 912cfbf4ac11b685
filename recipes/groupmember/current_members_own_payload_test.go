package groupmember_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// CurrentMembers: "this member is always included, with its own payload". Two members
// of one id in two processes share one node (package doc): the second writes its payload
// into the first's node. The first member's own payload is still "first" (its Node keeps
// it, and makes its node again with it); CurrentMembers must say so for this member, not
// report the other process's payload as its own.
func TestCurrentMembersReportsThisMembersOwnPayload(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1 := testutil.ConnectFailFast(t, srv.ConnectString())
	c2 := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const g = "/services/ownpayload"
	first := join(t, c1, g, "a", "first")
	second := join(t, c2, g, "a", "second")
	// The second member wrote its payload into the shared node; wait until the first's
	// cache has read it (the node holds "second").
	require.Eventually(t, func() bool {
		data, _, err := c2.GetData(ctx, g+"/a")
		return err == nil && string(data) == "second"
	}, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, c1.Sync(ctx, g))
	var got string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := first.CurrentMembers()
		require.NoError(t, err)
		got = string(cur["a"])
		if got != "first" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, "first", got, "CurrentMembers reports another process's payload as this member's own")
	_ = second
}
