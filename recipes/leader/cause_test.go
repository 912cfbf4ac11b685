package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestTermContextCause: a term context says why it ended (ErrLeadershipLost), and on an
// ended term it is cancelled at once (issue 16.4).
func TestTermContextCause(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	l := startLatch(t, c, "/leader/cause", "a")
	term := await(t, l, 20*time.Second, "a leads")
	tctx, cancel := term.Context(context.Background())
	defer cancel()
	require.NoError(t, l.Close())
	testutil.WaitClosed(t, tctx.Done(), 10*time.Second, "the term context after Close")
	assert.ErrorIs(t, context.Cause(tctx), leader.ErrLeadershipLost)
	ended, cancel2 := term.Context(context.Background())
	defer cancel2()
	assert.Error(t, ended.Err(), "a context of an ended term is cancelled at once")
	assert.ErrorIs(t, context.Cause(ended), leader.ErrLeadershipLost)
}
