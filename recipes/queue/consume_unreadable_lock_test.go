package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestConsumeWakesWhenUnreadableLockGoes: the package doc promises, with a lock path,
// that a consumer that finds an item's lock node taken "moves on, watching it. When it
// goes (its holder finished, or died ...), the consumer lists the queue again ..., so that
// the item is taken in its place in the queue's order; an idle consumer wakes for it."
//
// Another consumer (a Curator consumer with an ACL provider, say) holds the only item's
// lock node, which this consumer may not read. The idle consumer waits. The other
// consumer gives the item back (its lock node goes, the item stays): the idle consumer
// must wake and take it.
func TestConsumeWakesWhenUnreadableLockGoes(t *testing.T) {
	srv := server(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	c := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("other:secret")))
	ctx := testutil.Context(t, 60*time.Second)
	qpath, lpath := uniq("/unreadablelock/q"), uniq("/unreadablelock/locks")
	reported := make(chan error, 100)
	q, err := queue.New(c, qpath, queue.String{}, queue.WithLockPath(lpath),
		queue.WithErrorListener(func(err error) { reported <- err }))
	require.NoError(t, err)
	item, err := q.Put(ctx, "a")
	require.NoError(t, err)

	// The other consumer holds a, its lock node readable by its own user only.
	lock := framework.JoinPath(lpath, framework.NodeName(item))
	_, err = other.Create(ctx, lock, []byte("other consumer"), framework.WithMode(framework.Ephemeral),
		framework.WithParents(), framework.WithNodeACL(zk.DigestACL(zk.PermAll, "other", "secret")))
	require.NoError(t, err)

	got := make(chan string, 4)
	cctx, cancel := context.WithCancel(ctx)
	before := proxy.Forwarded()
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, s string) error { got <- s; return nil })
	}()
	defer func() { cancel(); <-done }()
	// The consumer's listing, the lock path's create, its create of a's lock node and its
	// read of that node reach the server; a request of the same session after them is
	// answered after them (one session's requests are handled in order).
	require.Eventually(t, func() bool { return proxy.Forwarded() >= before+4 }, 10*time.Second, time.Millisecond)
	_, err = c.Exists(ctx, qpath)
	require.NoError(t, err)
	select {
	case s := <-got:
		t.Fatalf("setup: the consumer took %q while another consumer held it", s)
	default:
	}

	// The other consumer gives a back: its lock node goes, the item stays.
	require.NoError(t, other.Delete(ctx, lock))
	select {
	case s := <-got:
		require.Equal(t, "a", s)
	case <-time.After(10 * time.Second):
		st, _ := other.Exists(ctx, item)
		var errs []error
		for len(reported) > 0 {
			errs = append(errs, <-reported)
		}
		t.Fatalf("a is free (its lock node gone, the item in the queue: %v), but the idle consumer did not wake for it within 10 s (errors reported to the listener: %v)", st != nil, errs)
	}
}
