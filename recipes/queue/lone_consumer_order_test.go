package queue_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// A lone consumer of an id queue takes the items in put order when an item is removed by
// id (IDQueue.Remove) between two ConsumeOne calls. Items are a, b, c, d; the consumer
// takes a, b is removed, and the next ConsumeOne must take c (then d). It finds b gone in
// its kept listing and must not take that for a race lost to another consumer, whose
// answer (a jump of a random 0..1 nodes ahead) would take d before c half the time. 24 rounds: a correct queue
// passes all of them; the jump passes them all with probability 2^-24.
func TestLoneIDConsumerKeepsOrderAcrossRemove(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	q, err := queue.NewID(c, "/loneorderremove/q", queue.String{})
	require.NoError(t, err)
	for round := range 24 {
		for _, id := range []string{"a", "b", "c", "d"} {
			_, err := q.Put(ctx, fmt.Sprint(id, round), id)
			require.NoError(t, err)
		}
		got := consumeN(t, ctx, q.ConsumeOne, 1) // lists a..d, takes a, keeps b, c, d
		n, err := q.Remove(ctx, "b")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got = append(got, consumeN(t, ctx, q.ConsumeOne, 2)...)
		require.Equal(t, []string{fmt.Sprint("a", round), fmt.Sprint("c", round), fmt.Sprint("d", round)}, got,
			"round %d: a lone consumer's order after a Remove", round)
	}
	assert.Empty(t, testutil.Children(t, srv.ConnectString(), "/loneorderremove/q"))
	// Containers: the server may have reaped the emptied paths already.
	if err := c.Delete(ctx, "/loneorderremove", framework.WithChildren()); !errors.Is(err, framework.ErrNoNode) {
		require.NoError(t, err)
	}
}

// A lone consumer takes the items of a queue path that was deleted and made again (its
// sequence numbers start again at 0) in put order. The listing ConsumeOne kept from the old
// queue names queue-0000000001.., which are now the new queue's second, third.. items:
// the next ConsumeOne takes b1 before b0.
func TestConsumeOneAfterQueueRecreated(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	admin := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	q, err := queue.New(c, "/loneorderrecreate/q", queue.String{})
	require.NoError(t, err)
	for i := range 3 {
		_, err := q.Put(ctx, fmt.Sprint("a", i))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"a0"}, consumeN(t, ctx, q.ConsumeOne, 1)) // keeps queue-..01, ..02

	// The queue is reset (an operator, a test's clean-up, a redeploy): a1 and a2 are gone.
	require.NoError(t, admin.Delete(ctx, "/loneorderrecreate/q", framework.WithChildren()))
	for i := range 3 {
		_, err := q.Put(ctx, fmt.Sprint("b", i))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"b0", "b1", "b2"}, consumeN(t, ctx, q.ConsumeOne, 3), "a lone consumer's order")
	// Containers: the server may have reaped the emptied paths already.
	if err := admin.Delete(ctx, "/loneorderrecreate", framework.WithChildren()); !errors.Is(err, framework.ErrNoNode) {
		require.NoError(t, err)
	}
}
