package semaphore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestMixedGoAndCuratorHolders has two Go semaphores (two sessions) and two Curator
// InterProcessSemaphoreV2 handles on one two-lease path, each acquiring again as soon as
// its lease was taken back, and checks that no more than two ever hold at once. The
// holders hold until the test releases them, one at a time: once two hold, the test
// waits until the server shows every other contender waiting (an inner lock node each,
// one lease node beside the holders'), then releases the oldest holder. The count of
// holders is exact at every report (a release is counted only once it returned), so a
// contender that took a lease while two held shows up as a report with two holders.
func TestMixedGoAndCuratorHolders(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 3*time.Minute)
	const path, leases, acquisitions = "/sem/mixed", 2, 40
	java := curatortest.Start(t, srv.ConnectString())
	type got struct {
		who   string
		lease *semaphore.Lease // Go's; nil for Java's
		err   error
	}
	events := make(chan got, 4)
	goSems := map[string]*semaphore.Semaphore{}
	for _, who := range []string{"g1", "g2"} {
		s, err := semaphore.New(testutil.Connect(t, srv.ConnectString()), path, leases)
		require.NoError(t, err)
		goSems[who] = s
	}
	javaRounds := map[string]int{}
	for _, who := range []string{"j1", "j2"} {
		_, err := java.Do(ctx, "sem.new %s %s %d", who, path, leases)
		require.NoError(t, err)
	}
	start := func(who string) {
		if s := goSems[who]; s != nil {
			go func() {
				l, err := s.Acquire(ctx)
				events <- got{who: who, lease: l, err: err}
			}()
			return
		}
		javaRounds[who]++
		tag := fmt.Sprintf("%s-%d", who, javaRounds[who])
		if err := java.Async(ctx, tag, "sem.acquire %s 1 -1", who); err != nil {
			events <- got{who: who, err: err}
			return
		}
		go func() {
			out, err := java.WaitDone(ctx, tag)
			if err == nil && out != "1" {
				err = fmt.Errorf("curator acquired %q leases", out)
			}
			events <- got{who: who, err: err}
		}()
	}
	release := func(g got) error {
		if g.lease != nil {
			return g.lease.Release(ctx)
		}
		_, err := java.Do(ctx, "sem.release %s", g.who)
		return err
	}
	for who := range goSems {
		start(who)
	}
	for who := range map[string]bool{"j1": true, "j2": true} {
		start(who)
	}
	watcher := testutil.Connect(t, srv.ConnectString())
	var holders []got
	acquired, outstanding := 0, 4
	receive := func(g got) {
		outstanding--
		require.NoError(t, g.err, "acquire by %s", g.who)
		acquired++
		holders = append(holders, g)
		require.LessOrEqual(t, len(holders), leases, "%s got a lease while %d held", g.who, len(holders)-1)
	}
	// settle waits, while the semaphore is full, until every contender still acquiring
	// is seen waiting on the server: each has an inner lock node and one of them (the
	// inner lock's holder) a lease node beside the holders'. An acquisition reported
	// meanwhile is a holder too many.
	settle := func() {
		// listW lists p with a watch; p is a container the server may have reaped while
		// empty: then no children, and a watch for its creation.
		listW := func(p string) ([]string, *framework.Watch) {
			for {
				kids, _, w, err := watcher.ChildrenW(ctx, p)
				if !errors.Is(err, framework.ErrNoNode) {
					require.NoError(t, err)
					return kids, w
				}
				st, w, err := watcher.ExistsW(ctx, p)
				require.NoError(t, err)
				if st == nil {
					return nil, w
				}
			}
		}
		for {
			locks, wl := listW(path + "/locks")
			kids, wk := listW(path + "/leases")
			if len(locks) == outstanding && len(kids) == len(holders)+min(outstanding, 1) {
				return
			}
			select {
			case g := <-events:
				receive(g)
			case <-wl.Done():
			case <-wk.Done():
			case <-ctx.Done():
				t.Fatalf("the contenders never settled: %d inner lock nodes, %d lease nodes, %d holders, %d acquiring",
					len(locks), len(kids), len(holders), outstanding)
			}
		}
	}
	for outstanding > 0 || len(holders) > 0 {
		if len(holders) == leases || (outstanding == 0 && len(holders) > 0) {
			settle()
			// Full (or draining): give back the oldest lease; its holder queues again.
			g := holders[0]
			holders = holders[1:]
			require.NoError(t, release(g), "release by %s", g.who)
			if acquired < acquisitions {
				start(g.who)
				outstanding++
			}
			continue
		}
		var g got
		select {
		case g = <-events:
		case <-ctx.Done():
			t.Fatalf("no acquisition with %d holders: %v", len(holders), ctx.Err())
		}
		receive(g)
	}
	require.GreaterOrEqual(t, acquired, acquisitions)
	requireEmpty(t, srv.ConnectString(), path)
}
