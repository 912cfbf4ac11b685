package semaphore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestTokenAfterReleaseFails: once Done is closed, Token fails with ErrLeaseLost, even
// when the czxid was read before the release.
func TestTokenAfterReleaseFails(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	s, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), "/sem/token", 2)
	require.NoError(t, err)
	l, err := s.Acquire(ctx)
	require.NoError(t, err)
	_, err = l.Token(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	<-l.Done()
	tok, err := l.Token(ctx)
	assert.ErrorIs(t, err, semaphore.ErrLeaseLost, "token %d after release", tok)
	requireEmpty(t, srv.ConnectString(), "/sem/token")
}
