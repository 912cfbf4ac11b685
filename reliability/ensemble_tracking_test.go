package reliability_test

import (
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// The ensemble's members are replaced one by one by dynamic reconfiguration (two added,
// then the original three removed, each stopped after its removal) while a client holds
// a lock and two others queue for it; before each change every client has learned the
// configuration before it (at a reconnection or by the tracker's periodic read: it sets
// no watch). Every client follows the configuration, keeps its
// session (no Lost, the same session id), ends up on a new member, and the lock is
// neither lost nor doubled; the namespace is kept (Curator's CURATOR-593/611 lost the
// chroot). A client that opted out of tracking keeps dialling its connect string's
// servers.
func TestEnsembleTrackingFollowsReconfiguration(t *testing.T) {
	leakcheck.Check(t)
	start := time.Now()
	e := zktest.NewEnsemble(t, 3, zktest.WithReconfig())
	ctx := testutil.Context(t, 10*time.Minute)
	original := e.ConnectString()

	// The session policy: a holder moving to another member is Suspended for a moment,
	// which is not a loss of its session.
	opts := []framework.Option{framework.WithNamespace("tracked"), framework.WithSessionTimeout(30 * time.Second),
		framework.WithErrorPolicy(framework.SessionErrorPolicy)}
	type member struct {
		name   string
		c      *framework.Client
		sid    int64
		states <-chan framework.State
		m      *mutex.Mutex
	}
	var clients []*member
	for _, name := range []string{"holder", "waiter 1", "waiter 2"} {
		c := testutil.Connect(t, original, opts...)
		m, err := mutex.New(c, "/lock")
		require.NoError(t, err)
		clients = append(clients, &member{name: name, c: c, sid: c.SessionID(), states: testutil.States(c), m: m})
	}
	pinned := testutil.Connect(t, original, append(opts, framework.WithEnsembleTracking(false))...)
	pinnedServers := pinned.Servers()
	require.Equal(t, clients[0].c.Servers(), pinnedServers, "before any reconfiguration every client dials its connect string")

	lease, err := clients[0].m.Acquire(ctx)
	require.NoError(t, err)
	type got struct {
		l   *mutex.Lease
		err error
	}
	waiters := make([]chan got, 2)
	for i := range waiters {
		waiters[i] = make(chan got, 1)
		go func() {
			l, err := clients[i+1].m.Acquire(ctx)
			waiters[i] <- got{l, err}
		}()
		require.Eventually(t, func() bool {
			p, err := clients[0].m.Participants(ctx)
			return err == nil && len(p) == i+2
		}, 30*time.Second, 20*time.Millisecond, "%s did not queue", clients[i+1].name)
	}
	queue, err := clients[0].m.Participants(ctx)
	require.NoError(t, err)

	// checkLock: the holder still holds, first in the queue, and no waiter got in.
	checkLock := func(when string) {
		t.Helper()
		assert.False(t, testutil.IsClosed(lease.Done()), "%s: the holder's Done closed", when)
		p, err := clients[0].m.Participants(ctx)
		if assert.NoError(t, err, when) {
			assert.Equal(t, queue, p, "%s: the queue changed", when)
		}
		for i, w := range waiters {
			select {
			case g := <-w:
				t.Fatalf("%s: %s's Acquire returned while the holder holds: %v", when, clients[i+1].name, g.err)
			default:
			}
		}
	}
	// following waits until every tracking client dials the members of the configuration.
	following := func(when string) {
		t.Helper()
		var want []string
		for _, i := range e.Members() {
			want = append(want, e.Addr(i))
		}
		slices.Sort(want)
		// A client reads the configuration at a reconnection or within the tracker's
		// poll interval (30 s, no watch): wait for what it learns, not for how fast.
		for _, m := range clients {
			deadline := time.Now().Add(3 * time.Minute)
			for !slices.Equal(m.c.Servers(), want) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s dials %v, not the configuration's %v, after 3 minutes", when, m.name, m.c.Servers(), want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		assert.Equal(t, pinnedServers, pinned.Servers(), "%s: the pinned client's servers changed", when)
		checkLock(when)
	}

	var added []int
	for range 2 {
		i, err := e.AddMember(ctx)
		require.NoError(t, err)
		added = append(added, i)
		following(fmt.Sprintf("after member %d was added", i))
	}
	t.Logf("members added after %v", time.Since(start).Round(time.Second))
	for i := range 3 {
		require.NoError(t, e.RemoveMember(ctx, i))
		following(fmt.Sprintf("after member %d was removed", i))
	}
	t.Logf("original members removed after %v", time.Since(start).Round(time.Second))

	newAddrs := []string{e.Addr(added[0]), e.Addr(added[1])}
	for _, m := range clients {
		// A client of the member removed last may not have seen its connection go yet.
		require.Eventually(t, func() bool { return slices.Contains(newAddrs, m.c.ConnectedServer()) }, 60*time.Second,
			20*time.Millisecond, "%s is connected to %q, not to a new member %v", m.name, m.c.ConnectedServer(), newAddrs)
		assert.Equal(t, m.sid, m.c.SessionID(), "%s kept its session", m.name)
	loop:
		for {
			select {
			case s := <-m.states:
				assert.NotEqual(t, framework.Lost, s, "%s reported Lost", m.name)
			default:
				break loop
			}
		}
	}
	checkLock("at the end")

	// The namespace is kept: the lock's nodes are under /tracked on the new members.
	raw := testutil.Children(t, e.Addr(added[0]), "/tracked/lock")
	assert.Len(t, raw, 3, "the lock's nodes under the namespace")
	assert.Equal(t, lease.Node(), queue[0], "the holder is first")
	assert.Contains(t, raw, path.Base(queue[0]))

	// The waiters get the lock in their order once it is released.
	require.NoError(t, lease.Release(ctx))
	g := <-waiters[0]
	require.NoError(t, g.err, "waiter 1")
	select {
	case g2 := <-waiters[1]:
		t.Fatalf("waiter 2 got in while waiter 1 holds: %v", g2.err)
	default:
	}
	require.NoError(t, g.l.Release(ctx))
	g = <-waiters[1]
	require.NoError(t, g.err, "waiter 2")
	require.NoError(t, g.l.Release(ctx))
	t.Logf("scenario took %v", time.Since(start).Round(time.Second))
}
