package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// A latch leader whose session expired (cut off by the proxy) while another latch took
// over and wrote: the old term's guarded write is refused, by the client (the term ended)
// and by the server (its latch node is gone); unguarded, it overwrites the new leader's.
func TestTermGuardAfterSessionExpired(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ca := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(1500*time.Millisecond))
	cb := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path, target = "/guard/latch", "/guard/latch-value"
	_, err := cb.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	la, err := leader.NewLatch(ca, path, "a")
	require.NoError(t, err)
	require.NoError(t, la.Start(ctx))
	t.Cleanup(func() { _ = la.Close() })
	require.NoError(t, la.Await(ctx))
	ta, err := la.Term()
	require.NoError(t, err)
	ga, err := ta.Guard()
	require.NoError(t, err)
	set := func(c *framework.Client, g framework.Guard, v string) error {
		_, err := c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte(v), -1))
		return err
	}
	require.NoError(t, set(ca, ga, "A"))
	lb, err := leader.NewLatch(cb, path, "b")
	require.NoError(t, err)
	require.NoError(t, lb.Start(ctx))
	t.Cleanup(func() { _ = lb.Close() })

	sidA := ca.SessionID()
	proxy.Stall()
	require.Eventually(t, func() bool {
		owners, err := zktest.EphemeralOwners(srv.Addr())
		return err == nil && len(owners[sidA]) == 0
	}, 20*time.Second, 50*time.Millisecond, "the server did not expire A's session")
	require.NoError(t, lb.Await(ctx))
	tb, err := lb.Term()
	require.NoError(t, err)
	gb, err := tb.Guard()
	require.NoError(t, err)
	require.NoError(t, set(cb, gb, "B"))
	proxy.Heal()

	testutil.WaitClosed(t, ta.Done(), 10*time.Second, "A's term after its session expired")
	require.ErrorIs(t, set(ca, ga, "A late"), framework.ErrFenced)
	require.ErrorIs(t, set(ca, framework.NewGuard(ga.Path(), ga.Czxid(), nil), "A late"), framework.ErrFenced)
	data, _, err := cb.GetData(ctx, target)
	require.NoError(t, err)
	require.Equal(t, "B", string(data))
	_, err = ca.SetData(ctx, target, []byte("A late"), -1) // negative control
	require.NoError(t, err)
	data, _, err = cb.GetData(ctx, target)
	require.NoError(t, err)
	require.Equal(t, "A late", string(data))
}

// SelectorGuard: the guard of the leadership a selector's function runs in; it passes
// while the function leads and is refused once the leadership was given up.
func TestSelectorGuard(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.Connect(t, srv.ConnectString())
	ctx := testutil.Context(t, 30*time.Second)
	const target = "/guard/selector-value"
	_, err := c.Create(ctx, target, []byte("0"), framework.WithParents())
	require.NoError(t, err)
	_, err = leader.SelectorGuard(ctx)
	require.ErrorIs(t, err, leader.ErrNotLeader)
	type got struct {
		g   framework.Guard
		err error
	}
	gotc := make(chan got, 1)
	s, err := leader.NewSelector(c, "/guard/selector", "a", func(ctx context.Context) error {
		g, err := leader.SelectorGuard(ctx)
		if err == nil {
			_, err = c.GuardedTransaction(ctx, g, framework.SetDataOp(target, []byte("leader"), -1))
		}
		gotc <- got{g, err}
		return nil // gives leadership up
	})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	t.Cleanup(func() { _ = s.Close() })
	r := <-gotc
	require.NoError(t, r.err)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.Eventually(t, func() bool {
		st, err := c.Exists(ctx, r.g.Path())
		return err == nil && st == nil
	}, 10*time.Second, 20*time.Millisecond, "the leadership node was not deleted")
	_, err = c.GuardedTransaction(ctx, r.g, framework.SetDataOp(target, []byte("late"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)
	_, err = c.GuardedTransaction(ctx, framework.NewGuard(r.g.Path(), 0, nil), framework.SetDataOp(target, []byte("late"), -1))
	require.ErrorIs(t, err, framework.ErrFenced)
}
