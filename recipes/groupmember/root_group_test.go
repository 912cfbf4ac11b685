package groupmember_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/zktest"
)

// A group at the root: every child of the membership path is a member (package doc, node
// layout), but the root's children include ZooKeeper's reserved /zookeeper, which no
// member made and which New refuses as a group. Either New refuses the root (as the
// other recipes refuse it as their path), or CurrentMembers names only members: never
// "zookeeper", with the reserved node's data as its payload.
func TestRootGroupMembersAreOnlyMembers(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	m, err := groupmember.New(c, "/", "rootmember", []byte("p"))
	if err != nil {
		require.True(t, errors.Is(err, framework.ErrInvalidArgument), "New refused the root group with %v", err)
		return
	}
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.WaitForInitialCreate(ctx))
	got, err := m.CurrentMembers()
	require.NoError(t, err)
	ids := make([]string, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	assert.NotContains(t, ids, "zookeeper", "ZooKeeper's reserved node is reported as a member of the root group (members %q)", ids)
	require.NoError(t, m.Close())
}
