package doublebarrier_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

func TestNewBadInput(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1") // never started: New must not talk to ZooKeeper
	require.NoError(t, err)
	defer c.Close()

	_, err = doublebarrier.New(nil, "/b", 2)
	assert.ErrorIs(t, err, framework.ErrInvalidArgument)
	for _, qty := range []int{0, -1} {
		_, err := doublebarrier.New(c, "/b", qty)
		assert.ErrorIs(t, err, framework.ErrInvalidArgument, "memberQty %d", qty)
	}
	for _, p := range []string{"", "b", "/b/", "/a//b", "/a/../b", "/", "/zookeeper", "/zookeeper/b", "/a\x01b"} {
		_, err := doublebarrier.New(c, p, 2)
		assert.Error(t, err, "path %q", p)
	}
	d1, err := doublebarrier.New(c, "/jobs/b", 3)
	require.NoError(t, err)
	d2, err := doublebarrier.New(c, "/jobs/b", 3)
	require.NoError(t, err)
	assert.Equal(t, "/jobs/b", d1.Path())
	assert.Equal(t, 3, d1.MemberQty())
	assert.Regexp(t, memberRE, framework.NodeName(d1.Node()))
	assert.Equal(t, "/jobs/b", framework.ParentPath(d1.Node()))
	assert.NotEqual(t, d1.Node(), d2.Node(), "each value is its own member")
}

// Ten members over three clients, three rounds on fresh paths: nobody returns from Enter
// before the last has arrived, nobody returns from Leave before the last has started
// leaving, and nothing is left behind.
func TestEnterAndLeaveTogether(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const clients, members = 3, 10
	cs := make([]*framework.Client, clients)
	for i := range cs {
		cs[i] = testutil.ConnectFailFast(t, srv.ConnectString())
	}
	ctx := testutil.Context(t, 120*time.Second)
	for round := 0; round < 3; round++ {
		path := fmt.Sprintf("/jobs/together/round-%d", round)
		var arrived, leaving, enteredEarly, leftEarly atomic.Int64
		var inside sync.WaitGroup
		inside.Add(members)
		errs := make(chan error, 2*members)
		var wg sync.WaitGroup
		for m := 0; m < members; m++ {
			d := newMember(t, cs[m%clients], path, members)
			wg.Add(1)
			go func() {
				defer wg.Done()
				arrived.Add(1)
				err := d.Enter(ctx)
				inside.Done()
				if err != nil {
					errs <- fmt.Errorf("enter: %w", err)
					return
				}
				if arrived.Load() != members {
					enteredEarly.Add(1)
				}
				inside.Wait() // so that the layout can be looked at with everyone in
				leaving.Add(1)
				if err := d.Leave(ctx); err != nil {
					errs <- fmt.Errorf("leave: %w", err)
					return
				}
				if leaving.Load() != members {
					leftEarly.Add(1)
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d did not finish", round)
		}
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		assert.Zero(t, enteredEarly.Load(), "round %d: a member passed Enter before all had arrived", round)
		assert.Zero(t, leftEarly.Load(), "round %d: a member passed Leave before all had started leaving", round)
		assertNoMembers(t, srv.ConnectString(), path, cs...)
	}
}

// The layout with everyone inside: one UUID node per member and ready.
func TestLayout(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/layout"
	a, b := newMember(t, c1, path, 2), newMember(t, c2, path, 2)

	ra := testutil.Go(ctx, a.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	testutil.NotYet(t, ra, 200*time.Millisecond, "Enter of one member out of two")
	assert.Equal(t, []string{framework.NodeName(a.Node())}, testutil.Children(t, srv.ConnectString(), path))
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Enter of the first member"))

	kids := testutil.Children(t, srv.ConnectString(), path)
	require.Len(t, kids, 3)
	assert.Contains(t, kids, "ready")
	assert.Contains(t, kids, framework.NodeName(a.Node()))
	assert.Contains(t, kids, framework.NodeName(b.Node()))
	for _, name := range []string{a.Node(), b.Node()} {
		st, err := c1.Exists(ctx, name)
		require.NoError(t, err)
		require.NotNil(t, st)
		assert.NotZero(t, st.EphemeralOwner, "member nodes are ephemeral")
		assert.Zero(t, st.DataLength)
	}
	st, err := c1.Exists(ctx, path+"/ready")
	require.NoError(t, err)
	require.NotNil(t, st)
	assert.Zero(t, st.EphemeralOwner, "ready is persistent")

	rb := testutil.Go(ctx, b.Leave)
	testutil.NotYet(t, rb, 200*time.Millisecond, "Leave of one member out of two")
	require.NoError(t, a.Leave(ctx))
	require.NoError(t, testutil.Result(t, rb, 10*time.Second, "Leave of the other member"))
	assertNoMembers(t, srv.ConnectString(), path, c1, c2)
	// The barrier's node is a container: the server reaps it once empty.
	require.Eventually(t, func() bool {
		st, err := c1.Exists(ctx, path)
		return err == nil && st == nil
	}, 20*time.Second, 100*time.Millisecond, "the barrier node should be reaped")
}

// memberQty is a threshold, not a limit: a member that comes after the barrier opened
// gets in at once, and leaves with the others.
func TestThresholdNotLimit(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/threshold"
	a, b, late := newMember(t, c, path, 2), newMember(t, c, path, 2), newMember(t, c, path, 2)
	ra := testutil.Go(ctx, a.Enter)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Enter"))
	require.NoError(t, late.Enter(ctx), "a third member gets in once the barrier is open")
	assert.Len(t, testutil.Children(t, srv.ConnectString(), path), 4)

	ra, rb := testutil.Go(ctx, a.Leave), testutil.Go(ctx, b.Leave)
	testutil.NotYet(t, ra, 200*time.Millisecond, "Leave while the late member is inside")
	testutil.NotYet(t, rb, 0, "Leave while the late member is inside")
	require.NoError(t, late.Leave(ctx))
	require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Leave"))
	require.NoError(t, testutil.Result(t, rb, 10*time.Second, "Leave"))
	assertNoMembers(t, srv.ConnectString(), path, c)
}

// Enter and Leave must alternate on one value.
func TestMisuse(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/misuse"
	d := newMember(t, c, path, 1)

	require.ErrorIs(t, d.Leave(ctx), doublebarrier.ErrNotEntered)
	require.NoError(t, d.Enter(ctx), "one member is enough for memberQty 1")
	require.ErrorIs(t, d.Enter(ctx), doublebarrier.ErrAlreadyEntered)
	require.NoError(t, d.Leave(ctx))
	require.ErrorIs(t, d.Leave(ctx), doublebarrier.ErrNotEntered)
	assertNoMembers(t, srv.ConnectString(), path, c)

	// Enter again after leaving: same member, same node name.
	node := d.Node()
	require.NoError(t, d.Enter(ctx))
	assert.Equal(t, []string{framework.NodeName(node), "ready"}, testutil.Children(t, srv.ConnectString(), path))
	require.NoError(t, d.Leave(ctx))

	// A concurrent Enter while one waits is refused.
	d2 := newMember(t, c, "/jobs/misuse2", 2)
	r := testutil.Go(ctx, d2.Enter)
	waitChildren(t, srv.ConnectString(), "/jobs/misuse2", 1)
	require.ErrorIs(t, d2.Enter(ctx), doublebarrier.ErrAlreadyEntered)
	require.ErrorIs(t, d2.Leave(ctx), doublebarrier.ErrNotEntered)
	require.NoError(t, newMember(t, c, "/jobs/misuse2", 2).Enter(ctx)) // its node is left to the client's close
	require.NoError(t, testutil.Result(t, r, 10*time.Second, "Enter"))
}

// A deadline or cancellation in Enter returns the context's error and removes our node,
// so the member is not counted.
func TestEnterTimeoutRemovesNode(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/jobs/enter-timeout"
	a := newMember(t, c, path, 2)

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := a.Enter(dctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assertNoMembers(t, srv.ConnectString(), path, c)

	cctx, cancel := context.WithCancel(ctx)
	r := testutil.Go(cctx, a.Enter)
	waitChildren(t, srv.ConnectString(), path, 1)
	cancel()
	require.ErrorIs(t, testutil.Result(t, r, 10*time.Second, "cancelled Enter"), context.Canceled)
	assertNoMembers(t, srv.ConnectString(), path, c)

	// The one that gave up was not counted: a second member alone does not open the
	// barrier, and the first can try again.
	b := newMember(t, c, path, 2)
	rb := testutil.Go(ctx, b.Enter)
	testutil.NotYet(t, rb, 300*time.Millisecond, "Enter of one member out of two")
	require.NoError(t, a.Enter(ctx))
	require.NoError(t, testutil.Result(t, rb, 10*time.Second, "Enter"))
	ra := testutil.Go(ctx, a.Leave)
	require.NoError(t, b.Leave(ctx))
	require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Leave"))
	assertNoMembers(t, srv.ConnectString(), path, c)
}

// A deadline in Leave returns the context's error, and the others still finish leaving,
// whether the one that gave up had the lowest node (which the others wait for) or not.
func TestLeaveTimeoutLetsOthersFinish(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c1, c2 := testutil.ConnectFailFast(t, srv.ConnectString()), testutil.ConnectFailFast(t, srv.ConnectString())
	for _, giveUp := range []string{"lowest", "highest"} {
		t.Run(giveUp+" gives up", func(t *testing.T) {
			ctx := testutil.Context(t, 60*time.Second)
			path := "/jobs/leave-timeout-" + giveUp
			a, b, x := newMember(t, c1, path, 3), newMember(t, c2, path, 3), newMember(t, c1, path, 3)
			ra, rb := testutil.Go(ctx, a.Enter), testutil.Go(ctx, b.Enter)
			require.NoError(t, x.Enter(ctx))
			require.NoError(t, testutil.Result(t, ra, 10*time.Second, "Enter"))
			require.NoError(t, testutil.Result(t, rb, 10*time.Second, "Enter"))

			all := []*doublebarrier.DoubleBarrier{a, b, x}
			quitter := all[0]
			for _, d := range all {
				name, cur := framework.NodeName(d.Node()), framework.NodeName(quitter.Node())
				if (giveUp == "lowest" && name < cur) || (giveUp == "highest" && name > cur) {
					quitter = d
				}
			}
			var others []*doublebarrier.DoubleBarrier
			for _, d := range all {
				if d != quitter {
					others = append(others, d)
				}
			}
			// One of the others leaves first and waits; the quitter gives up.
			r0 := testutil.Go(ctx, others[0].Leave)
			testutil.NotYet(t, r0, 200*time.Millisecond, "Leave while others are inside")
			dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err := quitter.Leave(dctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
			testutil.NotYet(t, r0, 200*time.Millisecond, "Leave while one member is inside")
			require.NoError(t, others[1].Leave(ctx))
			require.NoError(t, testutil.Result(t, r0, 10*time.Second, "Leave after the quitter gave up"))
			assertNoMembers(t, srv.ConnectString(), path, c1, c2)
		})
	}
}
