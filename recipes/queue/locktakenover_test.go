package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// A consumer B whose lock node was deleted by someone else while its handler ran has
// lost the item: consumer A locks it (its own lock node at the same path) and handles it
// too. B's removal must be bound to B's own lock node: it must neither delete A's lock
// node nor the item A holds, and B must learn that it lost the item (ErrNotRemoved). A
// then removes the item itself.
func TestLockNodeTakenOverRemovalSparesTheNewHolder(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	cb := testutil.Connect(t, srv.ConnectString())
	ca := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/locktakenover")
	t.Cleanup(func() { _ = ca.Delete(context.Background(), base, framework.WithChildren()) })
	qb, err := queue.New(cb, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	qa, err := queue.New(ca, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	p, err := qb.Put(ctx, "x")
	require.NoError(t, err)
	lock := base + "/locks/" + framework.NodeName(p)

	aIn, release := make(chan struct{}), make(chan struct{})
	var aDone <-chan error
	errB := qb.ConsumeOne(ctx, func(context.Context, string) error {
		// Someone else deletes B's lock node; A locks the item and handles it.
		if err := ca.Delete(ctx, lock); err != nil {
			return err
		}
		aDone = testutil.Go(ctx, func(ctx context.Context) error {
			return qa.ConsumeOne(ctx, func(context.Context, string) error {
				close(aIn)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			})
		})
		select {
		case <-aIn:
		case <-time.After(30 * time.Second):
		}
		return nil
	})
	require.NotNil(t, aDone, "B's handler ran: %v", errB)
	testutil.WaitClosed(t, aIn, time.Second, "A handles the item")
	st, err := ca.Exists(ctx, lock)
	require.NoError(t, err)
	assert.True(t, st != nil && st.EphemeralOwner == ca.SessionID(), "B's removal deleted A's lock node (B returned %v)", errB)
	assert.ErrorIs(t, errB, queue.ErrNotRemoved, "B removed the item A holds")
	close(release)
	require.NoError(t, testutil.Result(t, aDone, 30*time.Second, "A's ConsumeOne"))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/q"), "A removed the item")
	require.NoError(t, cb.WaitGuaranteedDeletes(ctx))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"))
}
