package mutex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestTokenAfterReleaseFails: once Done is closed, Token fails with ErrLeaseLost, even
// when the czxid was read (cached) before the release.
func TestTokenAfterReleaseFails(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	m := newMutex(t, testutil.Connect(t, srv.ConnectString()), "/locks/token")
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	tok, err := l.Token(ctx)
	require.NoError(t, err)
	assert.Positive(t, tok)
	require.NoError(t, l.Release(ctx))
	<-l.Done()
	tok, err = l.Token(ctx)
	assert.ErrorIs(t, err, mutex.ErrLeaseLost, "token %d after release", tok)
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/token")
}

// TestErrorTextsNameThePath: a failed release names the node once; acquiring on a closed
// client names the lock's path, not a node name that never exists.
func TestErrorTextsNameThePath(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	c := testutil.Connect(t, srv.ConnectString())
	m := newMutex(t, c, "/locks/texts")
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	c.Close() // the lease is lost with the client: its release fails
	err = l.Release(ctx)
	require.ErrorIs(t, err, mutex.ErrLeaseLost)
	assert.Equal(t, 1, strings.Count(err.Error(), l.Node()), "release error: %v", err)
	_, err = m.Acquire(ctx)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "lock-", "acquire error: %v", err)
	assert.Contains(t, err.Error(), "/locks/texts", "acquire error: %v", err)
}

// TestRevocableLeaseSeesItsNodeDeleted: another client deletes a revocable lease's node
// and takes the lock; the lease's Done closes and its Release reports ErrLeaseLost.
func TestRevocableLeaseSeesItsNodeDeleted(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	ca := testutil.Connect(t, srv.ConnectString())
	cb := testutil.Connect(t, srv.ConnectString())
	ma := newMutex(t, ca, "/locks/revdel", mutex.WithRevocationListener(func(*mutex.Lease) {}))
	mb := newMutex(t, cb, "/locks/revdel")
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, cb.Delete(ctx, la.Node()))
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)
	testutil.WaitClosed(t, la.Done(), 10*time.Second, "A's lease.Done after its node was deleted")
	assert.ErrorIs(t, la.Release(ctx), mutex.ErrLeaseLost)
	st, err := cb.Exists(ctx, lb.Node())
	require.NoError(t, err)
	assert.NotNil(t, st, "A's release must not touch B's node")
	require.NoError(t, lb.Release(ctx))
	assertNoChildren(t, srv.ConnectString(), "/locks/revdel", ca, cb)
}
