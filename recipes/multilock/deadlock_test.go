package multilock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// errDeadlock is what the watchdog reports when it sees a wait cycle that does not move.
var errDeadlock = errors.New("deadlock")

// lockState is the lock nodes under one lock path, in lock order, with their sessions.
type lockState struct {
	names  []string
	owners []int64
}

// readLocks lists the lock nodes of each path and the session that owns each, and returns
// a watch that fires when the children of any of the paths change.
func readLocks(ctx context.Context, c *framework.Client, paths []string) ([]lockState, []*framework.Watch, error) {
	var states []lockState
	var watches []*framework.Watch
	for _, p := range paths {
		kids, _, w, err := c.ChildrenW(ctx, p)
		if errors.Is(err, framework.ErrNoNode) {
			kids, err = nil, nil
			if _, w, err = c.ExistsW(ctx, p); err != nil {
				return nil, nil, err
			}
		}
		if err != nil {
			return nil, nil, err
		}
		watches = append(watches, w)
		framework.SortBySequence(kids, "lock-")
		var s lockState
		for _, k := range kids {
			st, err := c.Exists(ctx, framework.JoinPath(p, k))
			if err != nil {
				return nil, nil, err
			}
			if st == nil {
				continue // gone meanwhile: the watch fires
			}
			s.names = append(s.names, k)
			s.owners = append(s.owners, st.EphemeralOwner)
		}
		states = append(states, s)
	}
	return states, watches, nil
}

// waitCycle reports whether the holder of each of two locks waits in the other: a
// session that holds a's first node has a later node in b, and b's holder one in a.
func waitCycle(a, b lockState) bool {
	if len(a.owners) < 2 || len(b.owners) < 2 || a.owners[0] == b.owners[0] {
		return false
	}
	waitsIn := func(s lockState, sid int64) bool {
		for _, o := range s.owners[1:] {
			if o == sid {
				return true
			}
		}
		return false
	}
	return waitsIn(b, a.owners[0]) && waitsIn(a, b.owners[0])
}

// watchdog follows the lock nodes of a and b from the server's side and returns
// errDeadlock when it sees a wait cycle that no change of either lock's children ends
// within stuck: a healthy run changes them at every hand-over, a deadlock never. It
// returns nil when ctx ends.
func watchdog(ctx context.Context, c *framework.Client, a, b string, stuck time.Duration) error {
	for {
		states, watches, err := readLocks(ctx, c, []string{a, b})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var timeout <-chan time.Time
		var timer *time.Timer
		if waitCycle(states[0], states[1]) {
			timer = time.NewTimer(stuck)
			timeout = timer.C
		}
		select {
		case <-watches[0].Done():
		case <-watches[1].Done():
		case <-timeout:
			return fmt.Errorf("%w: %s %v owners %x, %s %v owners %x", errDeadlock,
				a, states[0].names, states[0].owners, b, states[1].names, states[1].owners)
		case <-ctx.Done():
			return nil
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// TestOppositeOrderNoDeadlock runs two multi-locks over the same two paths given in
// opposite orders. First a third session holds both locks while each multi-lock queues
// for its first lock; then the third lets go of both, so that taking the locks in the
// order given would leave each multi-lock holding one lock and waiting for the other.
// Then both run many rounds freely. A watchdog reads the lock nodes on the server and
// fails the test on a wait cycle that does not move; mutual exclusion is checked in
// process.
func TestOppositeOrderNoDeadlock(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const a, b = "/dl/a", "/dl/b"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c1 := testutil.Connect(t, srv.ConnectString())
	c2 := testutil.Connect(t, srv.ConnectString())
	third := testutil.Connect(t, srv.ConnectString())
	watcher := testutil.Connect(t, srv.ConnectString())
	ml1, err := multilock.NewFromPaths(c1, a, b)
	require.NoError(t, err)
	ml2, err := multilock.NewFromPaths(c2, b, a)
	require.NoError(t, err)

	ma, err := mutex.New(third, a)
	require.NoError(t, err)
	mb, err := mutex.New(third, b)
	require.NoError(t, err)
	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	lb, err := mb.Acquire(ctx)
	require.NoError(t, err)

	wctx, stopWatchdog := context.WithCancel(ctx)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	dog := make(chan error, 1)
	go func() {
		err := watchdog(wctx, watcher, a, b, 20*time.Second)
		if err != nil {
			stopRun()
		}
		dog <- err
	}()

	var holders, violations atomic.Int32
	const rounds = 60
	run := func(ml *multilock.MultiLock) <-chan error {
		return testutil.Go(runCtx, func(ctx context.Context) error {
			for i := 0; i < rounds; i++ {
				l, err := ml.Acquire(ctx)
				if err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
				if holders.Add(1) > 1 {
					violations.Add(1)
				}
				holders.Add(-1)
				if err := l.Release(context.WithoutCancel(ctx)); err != nil {
					return fmt.Errorf("round %d: release: %w", i, err)
				}
			}
			return nil
		})
	}
	r1 := run(ml1)
	r2 := run(ml2)
	// Both queue behind the third session: four lock nodes in all.
	for {
		states, watches, err := readLocks(ctx, watcher, []string{a, b})
		require.NoError(t, err)
		if len(states[0].names)+len(states[1].names) == 4 {
			break
		}
		select {
		case <-watches[0].Done():
		case <-watches[1].Done():
		case <-ctx.Done():
			t.Fatal("the multi-locks did not queue")
		}
	}
	require.NoError(t, la.Release(ctx))
	require.NoError(t, lb.Release(ctx))

	err1 := testutil.Result(t, r1, 3*time.Minute, "multi-lock 1")
	err2 := testutil.Result(t, r2, 3*time.Minute, "multi-lock 2")
	stopWatchdog()
	require.NoError(t, <-dog, "watchdog")
	require.NoError(t, err1)
	require.NoError(t, err2)
	require.Zero(t, violations.Load(), "two multi-locks held at once")
	assertNoChildren(t, srv.ConnectString(), a, c1, c2, third)
	assertNoChildren(t, srv.ConnectString(), b, c1, c2, third)
}

// assertNoChildren waits for the clients' guaranteed deletes, then checks that nothing
// is left under path.
func assertNoChildren(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		require.NoError(t, c.WaitGuaranteedDeletes(ctx))
		cancel()
	}
	require.Empty(t, testutil.Children(t, connect, path), "children left under %s", path)
}
