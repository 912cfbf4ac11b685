package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/zktest"
)

// Watches pile up: go-zookeeper cannot remove a watch, and Barrier.Wait and
// the double barrier's Enter registered a new go-zookeeper watcher on every call, so
// waiters polling with contexts that end while the barrier stayed shut left one channel per
// call behind (and a reconnect made every parked waiter look again and add one more).
// The server de-duplicates watches (one per path and session), so wchc cannot see this:
// the replay counts go-zookeeper's own watchers on the victim's connection
// (testutil.ZKWatchers).
//
// Fixed by 93bc470 (one watch per node and kind per session, shared by every waiter);
// it passes on 93bc470 and fails on 93bc470^ (c3690ca), where every cancelled poll left
// its watcher behind and the drop made each parked Wait add one more:
//
//	"56" is not less than or equal to "1" ... go-zookeeper watchers per round (data of
//	.../b + exists of .../db/ready) after 104 polls: r1 4+4, r2 8+8, r3 12+12, ...,
//	drop 32+28, ..., r6' 56+52; at most 1 per node and kind
//
// Fixed, every round shows 1+1; the server holds one watch per path either way.

func init() {
	defects = append(defects, defect{name: "polled-waits-leave-no-watches-behind", fix: "93bc470", run: replayWatchPileUp})
}

const (
	pileWaiters = 4 // barrier waiters, and double-barrier members, polling at once
	pileRounds  = 6 // rounds of polls before the drop, and again after it
)

func replayWatchPileUp(t *testing.T, w *defectWorld) {
	// The victim of this scenario counts its requests by kind: a poll is cancelled only once
	// it has sent the read that sets its watch.
	var getData, exists atomic.Int64
	v := connect(t, ens.ConnectString(), 10*time.Second, framework.WithDialer(w.proxy.Dialer()),
		framework.WithRequestHook(func(op string) {
			switch op {
			case "getData":
				getData.Add(1)
			case "exists":
				exists.Add(1)
			}
		}))
	reconnected := make(chan struct{}, 1)
	remove := v.AddListener(func(s framework.State) {
		if s == framework.Reconnected {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}
	})
	defer remove()

	bpath, dpath := w.base+"/b", w.base+"/db"
	ready := dpath + "/ready"
	b, err := barrier.New(v, bpath)
	require.NoError(t, err)
	require.NoError(t, b.Set(w.ctx))
	members := make([]*doublebarrier.DoubleBarrier, pileWaiters)
	for i := range members {
		members[i], err = doublebarrier.New(v, dpath, pileWaiters+1) // never reached by the pollers
		require.NoError(t, err)
	}
	memberNodes := func() int {
		kids, _, err := w.peer().Children(w.ctx, dpath)
		if errors.Is(err, framework.ErrNoNode) {
			return 0
		}
		require.NoError(t, err)
		n := 0
		for _, k := range kids {
			if k != "ready" {
				n++
			}
		}
		return n
	}

	// One round: pileWaiters Waits on the shut barrier and pileWaiters Enters that cannot
	// open the double barrier, all on one context. Once every Wait has sent its getData
	// and every member's node exists (each member creates it after its exists watch on
	// ready is set), fault runs (if any), and the context is cancelled: every call must
	// return the cancellation, and the members' nodes go.
	polls := 0
	round := func(fault func()) {
		g0 := getData.Load()
		ctx, cancel := context.WithCancel(w.ctx)
		defer cancel()
		errs := make(chan error, 2*pileWaiters)
		for _, m := range members {
			go func() { errs <- b.Wait(ctx) }()
			go func() { errs <- m.Enter(ctx) }()
		}
		pileWaitUntil(t, w.ctx, "every Wait sent its getData", func() bool { return getData.Load() >= g0+pileWaiters })
		pileWaitUntil(t, w.ctx, "every member's node exists", func() bool { return memberNodes() == pileWaiters })
		if fault != nil {
			fault()
		}
		cancel()
		for range 2 * pileWaiters {
			select {
			case err := <-errs:
				assert.ErrorIs(t, err, context.Canceled, "a poll of the shut barriers")
			case <-w.ctx.Done():
				t.Fatal("the cancelled polls did not return")
			}
		}
		polls += 2 * pileWaiters
		require.NoError(t, v.WaitGuaranteedDeletes(w.ctx))
		pileWaitUntil(t, w.ctx, "the cancelled members' nodes are gone", func() bool { return memberNodes() == 0 })
	}

	// The count per round; after the first round the reader must see the watch (a reader
	// that cannot would make this replay pass for nothing).
	var counts []string
	worst := 0
	measure := func(label string) {
		d, e := testutil.ZKWatchers(t, v, bpath).Data, testutil.ZKWatchers(t, v, ready).Exists
		counts = append(counts, fmt.Sprintf("%s %d+%d", label, d, e))
		worst = max(worst, d, e)
	}
	round(nil)
	pileWaitUntil(t, w.ctx, "go-zookeeper holds the barrier's data watch and ready's exists watch", func() bool {
		return testutil.ZKWatchers(t, v, bpath).Data >= 1 && testutil.ZKWatchers(t, v, ready).Exists >= 1
	})
	measure("r1")
	for i := 2; i <= pileRounds; i++ {
		round(nil)
		measure(fmt.Sprintf("r%d", i))
	}
	// The fault in the middle: every poll of a round is parked on its watch when the proxy
	// drops the connection; go-zookeeper reconnects (same session) and re-arms its
	// watchers, and each Wait looks again (every Wait sent its getData before the drop, and
	// one more after the reconnect: 2 per Wait at least).
	g0 := getData.Load()
	round(func() {
		select {
		case <-reconnected: // an old one (none is expected)
		default:
		}
		w.proxy.DropConnections()
		select {
		case <-reconnected:
		case <-w.ctx.Done():
			t.Fatal("the victim did not reconnect after the drop")
		}
		pileWaitUntil(t, w.ctx, "every Wait looked again after the reconnect", func() bool { return getData.Load() >= g0+2*pileWaiters })
	})
	measure("drop")
	for i := 1; i <= pileRounds; i++ {
		round(nil)
		measure(fmt.Sprintf("r%d'", i))
	}
	assert.LessOrEqual(t, worst, 1,
		"go-zookeeper watchers per round (data of %s + exists of %s) after %d polls: %s; at most 1 per node and kind",
		bpath, ready, polls, strings.Join(counts, ", "))
	t.Logf("%d polls (%d cancelled Waits, %d cancelled Enters), a drop in the middle: go-zookeeper watchers per round (data+exists): %s",
		polls, polls/2, polls/2, strings.Join(counts, ", "))

	// The server holds one watch per path for the session (it de-duplicates): wchc alone
	// could not tell.
	pileWaitUntil(t, w.ctx, "one server watch on each path", func() bool {
		return pileServerWatches(t, bpath) == 1 && pileServerWatches(t, ready) == 1
	})

	// The barriers open: every watch fires, on the client and on the server.
	require.NoError(t, b.Remove(w.ctx))
	require.NoError(t, b.Wait(w.ctx))
	pm, err := doublebarrier.New(w.peer(), dpath, pileWaiters+1)
	require.NoError(t, err)
	all := append([]*doublebarrier.DoubleBarrier{pm}, members...)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(all))
	for _, m := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Enter(w.ctx); err != nil {
				errs <- fmt.Errorf("enter: %w", err)
				return
			}
			if err := m.Leave(w.ctx); err != nil {
				errs <- fmt.Errorf("leave: %w", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err, "the last round of the double barrier")
	}
	pileWaitUntil(t, w.ctx, "go-zookeeper's watchers fired", func() bool {
		return testutil.ZKWatchers(t, v, bpath).Data == 0 && testutil.ZKWatchers(t, v, ready).Exists == 0
	})
	require.NoError(t, v.WaitGuaranteedDeletes(w.ctx))
	w.checkClean(dpath) // wchc on every member back to nothing under the base path, no node left
}

// pileWaitUntil waits until ok (state of the servers or the clients) holds, polling; it fails
// the test when ctx ends first.
func pileWaitUntil(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pileServerWatches counts the watches on path that wchc lists on every member of the
// ensemble (one line per session watching it).
func pileServerWatches(t *testing.T, path string) int {
	t.Helper()
	n := 0
	for i := 0; i < ens.Size(); i++ {
		out, err := zktest.FourLetterWord(ens.Addr(i), "wchc", 5*time.Second)
		require.NoError(t, err)
		n += strings.Count(out, "\t"+path+"\n")
	}
	return n
}
