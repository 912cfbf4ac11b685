package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

func jdo(t *testing.T, ctx context.Context, tool *curatortest.Tool, format string, args ...any) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := tool.Do(cctx, format, args...)
	require.NoError(t, err, format, args)
	return out
}

// jtake takes n items from Curator's consumer id; each is "item@epochMs".
func jtake(t *testing.T, ctx context.Context, tool *curatortest.Tool, id string, n int) (items []string, at []int64) {
	t.Helper()
	for range n {
		got := jdo(t, ctx, tool, "q.take %s 20000", id)
		require.NotEqual(t, "-", got, "Curator's consumer %s got nothing", id)
		item, ms, ok := strings.Cut(got, "@")
		require.True(t, ok, got)
		v, err := strconv.ParseInt(ms, 10, 64)
		require.NoError(t, err)
		items = append(items, item)
		at = append(at, v)
	}
	return items, at
}

// Each queue kind, both ways: what one side puts the other takes, in order, with equal
// payloads; priorities and due times agree.
func TestInteropCurator(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	tool := curatortest.StartQueueDriver(t, srv.ConnectString())
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 3*time.Minute)

	t.Run("plain", func(t *testing.T) {
		const path, lock = "/interop/plain", "/interop/plain-locks"
		jdo(t, ctx, tool, "q.new jp plain %s %s produce", path, lock)
		jdo(t, ctx, tool, "q.put jp j1")
		jdo(t, ctx, tool, "q.putmulti jp j2,j3,j4")
		jdo(t, ctx, tool, "q.put jp j5")
		q, err := queue.New(c, path, queue.String{}, queue.WithLockPath(lock))
		require.NoError(t, err)
		assert.Equal(t, []string{"j1", "j2", "j3", "j4", "j5"}, consumeN(t, ctx, q.ConsumeOne, 3), "Go takes Curator's items")

		_, err = q.Put(ctx, "g1")
		require.NoError(t, err)
		_, err = q.PutMulti(ctx, []string{"g2", "g3"})
		require.NoError(t, err)
		_, err = q.Put(ctx, "g4")
		require.NoError(t, err)
		jdo(t, ctx, tool, "q.new jc plain %s %s consume", path, lock)
		got, _ := jtake(t, ctx, tool, "jc", 4)
		assert.Equal(t, []string{"g1", "g2", "g3", "g4"}, got, "Curator takes Go's items")
		jdo(t, ctx, tool, "q.close jc")
		jdo(t, ctx, tool, "q.close jp")
		testutil.RequireNoChildren(t, srv.ConnectString(), path)
		testutil.RequireNoChildren(t, srv.ConnectString(), lock)
	})

	t.Run("priority", func(t *testing.T) {
		const path = "/interop/prio"
		prios := []int32{7, -2, 0, 300, -70000, 7}
		jdo(t, ctx, tool, "q.new jp priority %s - produce", path)
		for i, p := range prios {
			jdo(t, ctx, tool, "q.put jp j%d:%d %d", i, p, p)
		}
		q, err := queue.NewPriority(c, path, queue.String{})
		require.NoError(t, err)
		want := []string{"j4:-70000", "j1:-2", "j2:0", "j0:7", "j5:7", "j3:300"}
		assert.Equal(t, want, consumeN(t, ctx, q.ConsumeOne, 6), "Go takes Curator's priorities in order")

		for i, p := range prios {
			_, err := q.Put(ctx, fmt.Sprintf("j%d:%d", i, p), p)
			require.NoError(t, err)
		}
		jdo(t, ctx, tool, "q.new jc priority %s - consume", path)
		got, _ := jtake(t, ctx, tool, "jc", 6)
		assert.Equal(t, want, got, "Curator takes Go's priorities in order")
		jdo(t, ctx, tool, "q.close jc")
		jdo(t, ctx, tool, "q.close jp")
	})

	t.Run("delay", func(t *testing.T) {
		const path = "/interop/delay"
		jdo(t, ctx, tool, "q.new jp delay %s - produce", path)
		due := time.Now().Add(1200 * time.Millisecond).UnixMilli()
		jdo(t, ctx, tool, "q.put jp later %d", due)
		jdo(t, ctx, tool, "q.put jp now %d", time.Now().Add(-time.Hour).UnixMilli())
		q, err := queue.NewDelay(c, path, queue.String{})
		require.NoError(t, err)
		var at time.Time
		got := consumeN(t, ctx, func(ctx context.Context, h queue.Handler[string]) error {
			return q.ConsumeOne(ctx, func(ctx context.Context, s string) error { at = time.Now(); return h(ctx, s) })
		}, 2)
		assert.Equal(t, []string{"now", "later"}, got)
		assert.GreaterOrEqual(t, at.UnixMilli(), due, "Go delivers Curator's item no earlier than due")

		due = time.Now().Add(1200 * time.Millisecond).UnixMilli()
		_, err = q.Put(ctx, "later", time.UnixMilli(due))
		require.NoError(t, err)
		_, err = q.Put(ctx, "now", time.Now().Add(-time.Hour))
		require.NoError(t, err)
		jdo(t, ctx, tool, "q.new jc delay %s - consume", path)
		items, ats := jtake(t, ctx, tool, "jc", 2)
		assert.Equal(t, []string{"now", "later"}, items)
		assert.GreaterOrEqual(t, ats[1], due, "Curator delivers Go's item no earlier than due")
		jdo(t, ctx, tool, "q.close jc")
		jdo(t, ctx, tool, "q.close jp")
	})

	t.Run("id", func(t *testing.T) {
		const path = "/interop/ids"
		jdo(t, ctx, tool, "q.new jp id %s - produce", path)
		jdo(t, ctx, tool, "q.put jp a1 a")
		jdo(t, ctx, tool, "q.put jp b1 b")
		jdo(t, ctx, tool, "q.put jp a2 a")
		q, err := queue.NewID(c, path, queue.String{})
		require.NoError(t, err)
		n, err := q.Remove(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, 2, n, "Go removes Curator's items by id")
		assert.Equal(t, []string{"b1"}, consumeN(t, ctx, q.ConsumeOne, 1))

		for _, it := range [][2]string{{"x1", "x"}, {"y1", "y"}, {"x2", "x"}, {"z1", "z"}} {
			_, err := q.Put(ctx, it[0], it[1])
			require.NoError(t, err)
		}
		assert.Equal(t, "2", jdo(t, ctx, tool, "q.remove jp x"), "Curator removes Go's items by id")
		jdo(t, ctx, tool, "q.new jc id %s - consume", path)
		got, _ := jtake(t, ctx, tool, "jc", 2)
		assert.Equal(t, []string{"y1", "z1"}, got)
		jdo(t, ctx, tool, "q.close jc")
		jdo(t, ctx, tool, "q.close jp")
	})

	t.Run("simple", func(t *testing.T) {
		const path = "/interop/simple"
		jdo(t, ctx, tool, "sq.offer %s s1", path)
		jdo(t, ctx, tool, "sq.offer %s s2", path)
		q, err := queue.NewSimple(c, path, queue.String{})
		require.NoError(t, err)
		for _, want := range []string{"s1", "s2"} {
			v, err := q.Take(ctx)
			require.NoError(t, err)
			assert.Equal(t, want, v)
		}
		_, err = q.Offer(ctx, "g1")
		require.NoError(t, err)
		_, err = q.Offer(ctx, "g2")
		require.NoError(t, err)
		assert.Equal(t, "g1", jdo(t, ctx, tool, "sq.peek %s", path))
		assert.Equal(t, "g1", jdo(t, ctx, tool, "sq.take %s 10000", path))
		assert.Equal(t, "g2", jdo(t, ctx, tool, "sq.take %s 10000", path))
	})
}

// A Curator consumer killed mid-item (lock path) loses nothing: once its session ends
// the Go consumer, waiting on the lock node, takes the item.
func TestInteropCuratorConsumerKilled(t *testing.T) {
	leakcheck.Check(t)
	srv := server(t)
	tool := curatortest.StartQueueDriver(t, srv.ConnectString(), curatortest.WithSessionTimeout(2*time.Second))
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 2*time.Minute)
	const path, lock = "/interop/killed", "/interop/killed-locks"
	q, err := queue.New(c, path, queue.String{}, queue.WithLockPath(lock))
	require.NoError(t, err)
	jdo(t, ctx, tool, "q.new jh plain %s %s hold", path, lock)
	_, err = q.Put(ctx, "precious")
	require.NoError(t, err)
	ev, err := tool.WaitEvent(ctx, "holding jh")
	require.NoError(t, err)
	assert.Equal(t, "holding jh precious", ev)

	var got collector
	done := testutil.Go(ctx, func(ctx context.Context) error { return q.ConsumeOne(ctx, got.handle) })
	require.Eventually(t, func() bool { return c.Watches() >= 2 }, 20*time.Second, 10*time.Millisecond,
		"the Go consumer watches the queue and Curator's lock node")
	assert.Empty(t, got.items(), "not delivered while Curator's consumer holds it")
	tool.Kill()
	require.NoError(t, testutil.Result(t, done, 60*time.Second, "Go consumer"))
	assert.Equal(t, []string{"precious"}, got.items())
	testutil.RequireNoChildren(t, srv.ConnectString(), path)
	testutil.RequireNoChildren(t, srv.ConnectString(), lock)
}
