package groupmember_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// Two members of the same id on one client (one session): closing the second must not
// make the first leave the group. Its node stays, the same node (czxid unchanged).
func TestTwoMembersOfOneIDOnOneClient(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const g = "/services/twice"
	first := join(t, c, g, "a", "first")
	st, err := other.Exists(ctx, g+"/a")
	require.NoError(t, err)
	require.NotNil(t, st)

	second := join(t, c, g, "a", "second")
	require.NoError(t, second.Close())

	now, err := other.Exists(ctx, g+"/a")
	require.NoError(t, err)
	require.NotNil(t, now, "closing the second member made the first leave the group")
	assert.Equal(t, st.Czxid, now.Czxid, "the first member's node was deleted and made again")
	require.NoError(t, first.Close())
	testutil.RequireNoChildren(t, srv.ConnectString(), g)
}
