package locks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

// acquirer takes a lock of one kind on path through c and returns its release.
type acquirer func(ctx context.Context, c *framework.Client, path string) (release func(context.Context) error, err error)

func mutexAcquirer(ctx context.Context, c *framework.Client, path string) (func(context.Context) error, error) {
	m, err := mutex.New(c, path)
	if err != nil {
		return nil, err
	}
	l, err := m.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

func rwAcquirer(write bool) acquirer {
	return func(ctx context.Context, c *framework.Client, path string) (func(context.Context) error, error) {
		rw, err := rwlock.New(c, path)
		if err != nil {
			return nil, err
		}
		lk := rw.ReadLock()
		if write {
			lk = rw.WriteLock()
		}
		l, err := lk.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
}

func semMutexAcquirer(ctx context.Context, c *framework.Client, path string) (func(context.Context) error, error) {
	m, err := semaphore.NewMutex(c, path)
	if err != nil {
		return nil, err
	}
	l, err := m.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// TestGrantOnLaggingServer: for each lock kind, b waits behind a, through a follower; c
// waits behind b, through the leader. The follower hears of a's release (b's watch event
// is held on the way), then is cut off from its peers; b's node is then deleted by someone
// else, and c gets the lock. When b hears of a's release, its server still answers from
// its old state (syncLimit, 5 s in zktest, before it notices the cut): b's node there and
// first. b must not take the lock on that (REFERENCE.md: "A release or an admission never
// rests on a stale read"): it syncs first, which the cut-off follower cannot answer. Once
// the cut heals, b finds its node gone, starts over, and gets the lock after c let go.
func TestGrantOnLaggingServer(t *testing.T) {
	kinds := []struct {
		name    string
		a, b, c acquirer
		parents []string // where the kind's nodes are, under its path
	}{
		{"mutex", mutexAcquirer, mutexAcquirer, mutexAcquirer, []string{""}},
		{"write-lock", rwAcquirer(true), rwAcquirer(true), rwAcquirer(true), []string{""}},
		{"read-lock", rwAcquirer(true), rwAcquirer(false), rwAcquirer(true), []string{""}},
		// b waits for room holding the inner lock; c waits for the inner lock.
		{"semaphore-mutex", semMutexAcquirer, semMutexAcquirer, semMutexAcquirer, []string{"/leases", "/locks"}},
	}
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			leader, err := ens.Leader()
			require.NoError(t, err)
			f := (leader + 1) % ens.Size()
			proxy := zktest.NewProxy(t, ens.Addr(f))
			t.Cleanup(func() { _ = ens.HealPeers() })
			lead := testutil.Connect(t, ens.Addr(leader))
			lagging := testutil.Connect(t, proxy.ConnectString(), framework.WithSessionTimeout(40*time.Second),
				framework.WithConnectionTimeout(60*time.Second))
			ctx := testutil.Context(t, 2*time.Minute)
			path := "/lagging/" + k.name
			nodes := func(connect string) []string { // the kind's nodes, by path
				var all []string
				for _, p := range k.parents {
					kids, err := zktest.Children(ctx, connect, path+p)
					if err != nil {
						continue // not made yet
					}
					for _, kid := range kids {
						all = append(all, path+p+"/"+kid)
					}
				}
				return all
			}

			relA, err := k.a(ctx, lead, path)
			require.NoError(t, err)
			type result struct {
				release func(context.Context) error
				err     error
			}
			bres, cres := make(chan result, 1), make(chan result, 1)
			go func() { r, err := k.b(ctx, lagging, path); bres <- result{r, err} }()
			owned := func(sid int64) []string {
				var out []string
				for _, n := range nodes(ens.Addr(leader)) {
					if st, err := lead.Exists(ctx, n); err == nil && st != nil && st.EphemeralOwner == sid {
						out = append(out, n)
					}
				}
				return out
			}
			require.Eventually(t, func() bool { return len(owned(lagging.SessionID())) == len(k.parents) }, 20*time.Second, 20*time.Millisecond, "b does not queue")
			bNodes, aNodes := owned(lagging.SessionID()), owned(lead.SessionID())
			go func() { r, err := k.c(ctx, lead, path); cres <- result{r, err} }()
			require.Eventually(t, func() bool { return len(owned(lead.SessionID())) == len(aNodes)+1 }, 20*time.Second, 20*time.Millisecond, "c does not queue")

			proxy.HoldReplies()
			require.NoError(t, relA(ctx))
			require.Eventually(t, func() bool {
				st, err := zktest.Dial(ctx, ens.Addr(f), 10*time.Second)
				if err != nil {
					return false
				}
				defer st.Close()
				for _, n := range aNodes {
					if ok, _, err := st.Exists(n); err != nil || ok {
						return false
					}
				}
				return true
			}, 20*time.Second, 20*time.Millisecond, "the follower did not apply a's release")
			require.NoError(t, ens.Isolate(f))
			for _, n := range bNodes {
				require.NoError(t, lead.Delete(ctx, n))
			}
			var c result
			select {
			case c = <-cres:
				require.NoError(t, c.err)
			case <-time.After(20 * time.Second):
				t.Fatal("c did not get the lock once a and b were gone")
			}

			proxy.Heal() // b hears of a's release, from its server's old state
			select {
			case b := <-bres:
				t.Fatalf("b's Acquire returned (%v) while c holds the lock: it took the lock on its cut-off server's stale answer", b.err)
			case <-time.After(2 * time.Second):
			}

			require.NoError(t, ens.HealPeers())
			_, err = ens.WaitLeader(ctx)
			require.NoError(t, err)
			require.NoError(t, c.release(ctx))
			select {
			case b := <-bres:
				require.NoError(t, b.err)
				require.NoError(t, b.release(ctx))
			case <-time.After(60 * time.Second):
				t.Fatal("b did not get the lock after c let go")
			}
		})
	}
}
