package reliability_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// Fixed defects, replayed through the reliability machinery: a victim
// behind a fault proxy, a peer connected directly, the fault (a stall, a drop, a peer's
// write) or the cancellation at the moment that matters, and the checkers (the peer's
// nodes untouched, overlap, nothing left behind). Each failed on the code before its fix
// (the fix is named); the file uses only what those older trees had too, so that it can be
// dropped into one of them to show it.

// defect is one replayed defect.
type defect struct {
	name string // the scenario and what it checks
	fix  string // the commit that fixed it
	run  func(t *testing.T, w *defectWorld)
}

// defectWorld is one defect's world: an env whose victim has a session long enough that no
// fault of these scenarios expires it, and a context bounding the whole scenario.
type defectWorld struct {
	*env
	ctx context.Context
}

// newDefectWorld builds the world: the proxy, the victim behind it (with opts), one peer.
func newDefectWorld(t *testing.T, ctx context.Context, opts ...framework.Option) *defectWorld {
	t.Helper()
	healthy(t)
	e := &env{t: t, base: fmt.Sprintf("/rel/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), pathSeq.Add(1))}
	e.proxy = zktest.NewProxy(t, ens.ConnectString())
	e.victim = connect(t, ens.ConnectString(), otherSession, append([]framework.Option{framework.WithDialer(e.proxy.Dialer())}, opts...)...)
	e.others = []*framework.Client{connect(t, ens.ConnectString(), otherSession)}
	return &defectWorld{env: e, ctx: ctx}
}

func (w *defectWorld) peer() *framework.Client { return w.others[0] }

// waitDeletes waits (bounded) for the victim's guaranteed deletes, queued ones included.
func (w *defectWorld) waitDeletes() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 20*time.Second)
	defer cancel()
	assert.NoError(w.t, w.victim.WaitGuaranteedDeletes(ctx), "the victim's guaranteed deletes do not end")
}

// exists reports whether p exists, read after a sync (as a user checking would).
func (w *defectWorld) exists(p string) bool {
	w.t.Helper()
	require.NoError(w.t, w.peer().Sync(w.ctx, p))
	st, err := w.peer().Exists(w.ctx, p)
	require.NoError(w.t, err)
	return st != nil
}

var defects = []defect{
	{name: "close-from-state-listener", fix: "cb50bb2", run: func(t *testing.T, w *defectWorld) {
		// The usual "on Suspended, shut down" listener: its Close must return.
		closed := make(chan error, 1)
		var once sync.Once
		remove := w.victim.AddListener(func(s framework.State) {
			if s == framework.Suspended {
				once.Do(func() { closed <- w.victim.Close() })
			}
		})
		defer remove()
		w.proxy.DropConnections()
		select {
		case err := <-closed:
			assert.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Fatal("Close from the state listener did not return within 60 s")
		}
	}},
	{name: "late-create-of-cancelled-barrier-set", fix: "053c143", run: func(t *testing.T, w *defectWorld) {
		// Set times out while its create is held; the create lands after the heal and a
		// second Set relies on it: the late reply must not make the framework delete it.
		p := w.base + "/b"
		_, err := w.peer().Create(w.ctx, w.base, nil, framework.WithParents()) // so that Set's first request is its create
		require.NoError(t, err)
		b, err := barrier.New(w.victim, p)
		require.NoError(t, err)
		w.proxy.Stall()
		sctx, scancel := context.WithTimeout(w.ctx, 300*time.Millisecond)
		err = b.Set(sctx)
		scancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		w.proxy.Heal()
		require.NoError(t, b.Set(w.ctx))
		_, err = w.victim.Exists(w.ctx, "/") // one more round trip: the late reply was handled
		require.NoError(t, err)
		w.waitDeletes()
		assert.True(t, w.exists(p), "the barrier %s set by the second Set is gone: the first Set's late create was undone", p)
		require.NoError(t, b.Remove(w.ctx))
	}},
	{name: "guaranteed-delete-told-not-empty", fix: "495c479", run: func(t *testing.T, w *defectWorld) {
		// A guaranteed delete told NotEmpty returns the error and queues nothing: the node
		// must survive someone else emptying it.
		p := w.base + "/ne"
		_, err := w.peer().Create(w.ctx, p+"/c", nil, framework.WithParents())
		require.NoError(t, err)
		err = w.victim.Delete(w.ctx, p, framework.Guaranteed())
		assert.Error(t, err, "a guaranteed delete of a node with a child")
		require.NoError(t, w.peer().Delete(w.ctx, p+"/c"))
		w.waitDeletes()
		assert.True(t, w.exists(p), "%s was deleted in the background after its delete was refused (NotEmpty)", p)
		require.NoError(t, w.peer().Delete(w.ctx, p))
	}},
	{name: "versioned-guaranteed-delete-stays-versioned", fix: "495c479", run: func(t *testing.T, w *defectWorld) {
		// Delete(version 0, guaranteed) is cancelled while stalled (so it goes to the
		// background); the peer writes (version 1) meanwhile: the delete must not land.
		p := w.base + "/v"
		_, err := w.peer().Create(w.ctx, p, []byte("0"), framework.WithParents())
		require.NoError(t, err)
		w.proxy.Stall()
		dctx, dcancel := context.WithTimeout(w.ctx, 300*time.Millisecond)
		err = w.victim.Delete(dctx, p, framework.WithVersion(0), framework.Guaranteed())
		dcancel()
		assert.Error(t, err, "a delete cancelled while stalled")
		_, err = w.peer().SetData(w.ctx, p, []byte("1"), 0)
		require.NoError(t, err)
		w.proxy.Heal()
		w.waitDeletes()
		assert.True(t, w.exists(p), "%s (version 1) was deleted by a guaranteed delete of version 0", p)
		require.NoError(t, w.peer().Delete(w.ctx, p))
	}},
	{name: "simulated-lost-ends-the-session", fix: "3069274", run: func(t *testing.T, w *defectWorld) {
		// A holder whose client says Lost (simulated expiry at 30 % of a 10 s session, so
		// the server still holds the session when the stall heals) and that does not
		// release must not keep everyone else out: Lost ends that session, and with it the
		// lock node. The overlap checker counts the holder until its lease's Done.
		p := w.base + "/m"
		c := connect(t, ens.ConnectString(), 10*time.Second, framework.WithDialer(w.proxy.Dialer()),
			framework.WithSimulatedExpiry(0.3))
		lost := make(chan struct{})
		var once sync.Once
		remove := c.AddListener(func(s framework.State) {
			if s == framework.Lost {
				once.Do(func() { close(lost) })
			}
		})
		defer remove()
		m, err := mutex.New(c, p)
		require.NoError(t, err)
		lease, err := m.Acquire(w.ctx)
		require.NoError(t, err)
		ov := newOverlap(1)
		ov.enter(true)
		w.proxy.Stall()
		for _, ev := range []struct {
			ch   <-chan struct{}
			what string
		}{{lost, "the client reported Lost"}, {lease.Done(), "the lease's Done closed"}} {
			select {
			case <-ev.ch:
			case <-time.After(60 * time.Second):
				w.proxy.Heal()
				t.Fatalf("%s not within 60 s of the stall", ev.what)
			}
		}
		ov.exit(true) // the holder stops here
		w.proxy.Heal()
		pm, err := mutex.New(w.peer(), p)
		require.NoError(t, err)
		actx, acancel := context.WithTimeout(w.ctx, 30*time.Second)
		defer acancel()
		pl, err := pm.Acquire(actx)
		if !assert.NoError(t, err, "the peer did not get the lock within 30 s after the holder's client said Lost") {
			return
		}
		ov.enter(true)
		ov.exit(true)
		require.NoError(t, pl.Release(w.ctx))
		entries, violations := ov.counts()
		assert.Zero(t, violations, "overlap: %d of %d entries", violations, entries)
		w.checkClean(p)
	}},
	{name: "lease-context-is-no-identity", fix: "5534308", run: func(t *testing.T, w *defectWorld) {
		// A holder hands its lease context to four workers (errgroup style); none of them
		// may get in while it holds the lock (overlap checker).
		p := w.base + "/m"
		m, err := mutex.New(w.victim, p)
		require.NoError(t, err)
		lease, err := m.Acquire(w.ctx)
		require.NoError(t, err)
		ov := newOverlap(1)
		ov.enter(true)
		lctx, lcancel := lease.Context(w.ctx)
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				actx, acancel := context.WithTimeout(lctx, 500*time.Millisecond)
				defer acancel()
				l, err := m.Acquire(actx)
				if err != nil {
					return // refused (or timed out behind the holder): not inside
				}
				ov.enter(true)
				ov.exit(true)
				rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer rcancel()
				_ = l.Release(rctx)
			}()
		}
		wg.Wait()
		ov.exit(true)
		lcancel()
		require.NoError(t, lease.Release(w.ctx))
		entries, violations := ov.counts()
		assert.Zero(t, violations, "overlap: %d of %d entries found the lock held by the lease whose context they had", violations, entries)
		w.checkClean(p)
	}},
	{name: "token-after-release", fix: "ba55ef9", run: func(t *testing.T, w *defectWorld) {
		// A released lease must not hand out a fencing token: the fenced store would take a
		// write from a process that no longer holds the lock, as long as no newer token came.
		p := w.base + "/m"
		m, err := mutex.New(w.victim, p)
		require.NoError(t, err)
		lease, err := m.Acquire(w.ctx)
		require.NoError(t, err)
		st := &store{fenced: true}
		tok, err := lease.Token(w.ctx)
		require.NoError(t, err)
		st.write(tok, st.read())
		require.NoError(t, lease.Release(w.ctx))
		if tok, err := lease.Token(w.ctx); err == nil {
			st.write(tok, st.read())
			accepted, _, _ := st.counts()
			t.Errorf("Token after Release answered %d, nil: the fenced store took %d writes, the last after the release", tok, accepted)
		}
		w.checkClean(p)
	}},
	{name: "revocable-lease-node-deleted", fix: "0f28401", run: func(t *testing.T, w *defectWorld) {
		// Someone deletes a revocable lease's node: the lease must end (Done), so that its
		// holder stops before the next holder (who gets in at once) writes.
		p := w.base + "/m"
		m, err := mutex.New(w.victim, p, mutex.WithRevocationListener(func(*mutex.Lease) {}))
		require.NoError(t, err)
		lease, err := m.Acquire(w.ctx)
		require.NoError(t, err)
		require.NoError(t, w.peer().Delete(w.ctx, lease.Node()))
		select {
		case <-lease.Done():
		case <-time.After(30 * time.Second):
			t.Errorf("the lease whose node %s was deleted is still not Done after 30 s", lease.Node())
		}
		err = lease.Release(w.ctx)
		assert.Error(t, err, "Release of a lease whose node someone else deleted")
		w.checkClean(p)
	}},
	{name: "lease-context-says-why", fix: "6b457ed", run: func(t *testing.T, w *defectWorld) {
		// A lease context ends at once when the lease has ended, with a cause that says why
		// (not a bare context.Canceled).
		p := w.base + "/m"
		m, err := mutex.New(w.victim, p)
		require.NoError(t, err)
		lease, err := m.Acquire(w.ctx)
		require.NoError(t, err)
		require.NoError(t, lease.Release(w.ctx))
		lctx, lcancel := lease.Context(w.ctx)
		defer lcancel()
		assert.Error(t, lctx.Err(), "the context of an ended lease is not done at once")
		cause := context.Cause(lctx)
		assert.False(t, cause == nil || cause == context.Canceled, //nolint:errorlint // the bare sentinel is the defect
			"the context of a released lease ends with %v, which does not say why", cause)
		w.checkClean(p)
	}},
}

// TestDefectsReplayed replays each fixed defect that the reliability machinery can
// express (see defects).
func TestDefectsReplayed(t *testing.T) {
	for _, d := range defects {
		t.Run(d.name, func(t *testing.T) {
			leakcheck.Check(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			w := newDefectWorld(t, ctx)
			d.run(t, w)
			w.checkClean()
			_ = w.peer().Delete(ctx, w.base) // the persistent parent some scenarios made (a leftover child fails checkClean)
		})
	}
}
