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

// A consumer B whose lock node was deleted by someone else while its handler ran
// reports ErrNotRemoved (package doc: "A consumer whose lock node was deleted by someone
// else while its handler ran (another consumer may have locked and taken the item since)
// removes nothing and reports ErrNotRemoved"). Here consumer A locks the item after B's
// lock node went, handles it and removes it, all before B's handler returns: B then finds
// the item gone and its lock node gone. The item was delivered to both handlers; B must
// not report a clean delivery (nil), which would make two handlers both told nil.
func TestLockNodeDeletedItemFinishedByOtherReportsNotRemoved(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	cb := testutil.Connect(t, srv.ConnectString())
	ca := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, time.Minute)
	base := uniq("/lockdeletedfinished")
	t.Cleanup(func() { _ = ca.Delete(context.Background(), base, framework.WithChildren()) })
	qb, err := queue.New(cb, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	qa, err := queue.New(ca, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
	require.NoError(t, err)
	p, err := qb.Put(ctx, "x")
	require.NoError(t, err)
	lock := base + "/locks/" + framework.NodeName(p)

	var gotA []string
	var errA error
	ranB := false
	errB := qb.ConsumeOne(ctx, func(_ context.Context, s string) error {
		ranB = true
		// Someone else deletes B's lock node; A locks the item, handles it and removes
		// it before B's handler returns.
		if err := ca.Delete(ctx, lock); err != nil {
			return err
		}
		errA = qa.ConsumeOne(ctx, func(_ context.Context, s string) error {
			gotA = append(gotA, s)
			return nil
		})
		return nil
	})
	require.True(t, ranB, "B's handler ran: %v", errB)
	require.NoError(t, errA, "A's ConsumeOne")
	require.Equal(t, []string{"x"}, gotA, "A handled the item too")
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/q"), "A removed the item")
	assert.ErrorIs(t, errB, queue.ErrNotRemoved,
		"B, whose lock node was deleted by someone else while its handler ran, reported %v: the item was delivered to A and B and both were told nil", errB)
	require.NoError(t, cb.WaitGuaranteedDeletes(ctx))
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), base+"/locks"))
}
