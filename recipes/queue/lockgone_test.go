package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// A killed consumer's item under a backlog is redone as soon as its lock node goes, not
// behind newer items. A consumer with a lock path that passed over an
// item because another consumer held its lock node watches that node; when it goes (the
// holder finished, or died and its session ended), the item is the next one the
// consumer takes, before the rest of a backlog listed earlier: Consume lists again after
// the item in hand, ConsumeOne at its next call. Here consumer A holds the first item's
// lock node and dies (its session closed: its lock node goes, as it does when the server
// expires a killed consumer's session) while B handles the second of six items.
// Deterministic: B's handler returns once B's own client has read the lock node gone,
// and a watch event comes before the replies that follow it.
func TestFreedItemTakenBeforeTheBacklog(t *testing.T) {
	leakcheck.Check(t)
	for _, one := range []bool{false, true} {
		t.Run(fmt.Sprintf("ConsumeOne=%v", one), func(t *testing.T) {
			srv := server(t)
			b := testutil.ConnectFailFast(t, srv.ConnectString())
			a := testutil.Connect(t, srv.ConnectString())
			ctx := testutil.Context(t, time.Minute)
			base := uniq("/lockgone")
			t.Cleanup(func() { _ = b.Delete(context.Background(), base, framework.WithChildren()) })
			q, err := queue.New(b, base+"/q", queue.String{}, queue.WithLockPath(base+"/locks"))
			require.NoError(t, err)
			var first string
			for i := range 6 {
				p, err := q.Put(ctx, fmt.Sprint("x", i))
				require.NoError(t, err)
				if i == 0 {
					first = p
				}
			}
			// A holds x0: its lock node, ephemeral, in A's session.
			lock := base + "/locks/" + framework.NodeName(first)
			_, err = a.Create(ctx, lock, nil, framework.WithMode(framework.Ephemeral), framework.WithParents())
			require.NoError(t, err)
			kill := func() {
				require.NoError(t, a.Close())
				require.Eventually(t, func() bool {
					st, err := b.Exists(ctx, lock)
					return err == nil && st == nil
				}, 20*time.Second, 5*time.Millisecond, "B's client reads A's lock node gone")
			}
			var mu sync.Mutex
			var got []string
			h := func(_ context.Context, s string) error {
				if s == "x1" && !one {
					kill() // A dies while B handles x1
				}
				mu.Lock()
				got = append(got, s)
				mu.Unlock()
				return nil
			}
			if one {
				require.NoError(t, q.ConsumeOne(ctx, h))
				kill() // A dies between B's calls
				for range 5 {
					require.NoError(t, q.ConsumeOne(ctx, h))
				}
			} else {
				cctx, cancel := context.WithCancel(ctx)
				done := testutil.Go(cctx, func(ctx context.Context) error { return q.Consume(ctx, h) })
				require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 6 }, 30*time.Second, 5*time.Millisecond, "B handles all six")
				cancel()
				require.ErrorIs(t, testutil.Result(t, done, 20*time.Second, "Consume"), context.Canceled)
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{"x1", "x0", "x2", "x3", "x4", "x5"}, got, "the item A held is taken as soon as its lock node is gone, before the backlog")
		})
	}
}
