package locks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestGrantOnLaggingServerAfterPredecessorGone: as TestGrantOnLaggingServer, but b learns
// that a let go not from a watch event: its read of a's node (the data watch it means to
// set) is answered "no node" by its follower. Held at the moment b sends that read (the
// request hook): a lets go, the follower applies it, the follower is cut off from its
// peers, b's node is deleted by someone else and c takes the lock through the leader.
// b's read then finds a gone, and b lists again on the same cut-off follower, which still
// shows b's node, first. b must not take the lock on that listing (REFERENCE.md: "A
// release or an admission never rests on a stale read"): the "no node" answer is a wait
// that ended as much as a watch event is, and the listing after it needs the same sync.
func TestGrantOnLaggingServerAfterPredecessorGone(t *testing.T) {
	kinds := []struct {
		name    string
		a, b, c acquirer
	}{
		{"mutex", mutexAcquirer, mutexAcquirer, mutexAcquirer},
		{"write-lock", rwAcquirer(true), rwAcquirer(true), rwAcquirer(true)},
		{"read-lock", rwAcquirer(true), rwAcquirer(false), rwAcquirer(true)},
	}
	leakcheck.Check(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithPeerProxies())
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			leader, err := ens.Leader()
			require.NoError(t, err)
			f := (leader + 1) % ens.Size()
			t.Cleanup(func() { _ = ens.HealPeers() })
			lead := testutil.Connect(t, ens.Addr(leader))
			ctx := testutil.Context(t, 2*time.Minute)
			path := "/laggingnonode/" + k.name

			relA, err := k.a(ctx, lead, path)
			require.NoError(t, err)

			var (
				mu      sync.Mutex
				armed   bool
				hookErr error
				cRel    func(context.Context) error
				hooked  = make(chan struct{})
				lagging *framework.Client
			)
			// act runs on b's goroutine as b's read of a's node goes out.
			act := func() error {
				kids, _, err := lead.Children(ctx, path)
				if err != nil {
					return err
				}
				var bNode string
				for _, kid := range kids {
					st, err := lead.Exists(ctx, path+"/"+kid)
					if err == nil && st != nil && st.EphemeralOwner == lagging.SessionID() {
						bNode = path + "/" + kid
					}
				}
				if bNode == "" {
					return fmt.Errorf("b's node not found among %v", kids)
				}
				if err := relA(ctx); err != nil {
					return err
				}
				deadline := time.Now().Add(20 * time.Second)
				for {
					conn, err := zktest.Dial(ctx, ens.Addr(f), 10*time.Second)
					if err == nil {
						n, _, err := conn.Children(path)
						conn.Close()
						if err == nil && len(n) == 1 {
							break // a's node gone there, b's still there
						}
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("the follower did not apply a's release")
					}
					time.Sleep(20 * time.Millisecond)
				}
				if err := ens.Isolate(f); err != nil {
					return err
				}
				if err := lead.Delete(ctx, bNode); err != nil {
					return err
				}
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				defer cancel()
				r, err := k.c(cctx, lead, path)
				if err != nil {
					return fmt.Errorf("c: %w", err)
				}
				cRel = r
				return nil
			}
			lagging = testutil.Connect(t, ens.Addr(f), framework.WithSessionTimeout(40*time.Second),
				framework.WithConnectionTimeout(60*time.Second),
				framework.WithRequestHook(func(op string) {
					mu.Lock()
					go_ := armed && op == "getData"
					if go_ {
						armed = false
					}
					mu.Unlock()
					if go_ {
						hookErr = act()
						close(hooked)
					}
				}))
			mu.Lock()
			armed = true
			mu.Unlock()
			type result struct {
				release func(context.Context) error
				err     error
			}
			bres := make(chan result, 1)
			go func() { r, err := k.b(ctx, lagging, path); bres <- result{r, err} }()
			select {
			case <-hooked:
			case <-time.After(30 * time.Second):
				t.Fatal("b sent no read of the node ahead")
			}
			require.NoError(t, hookErr)
			select {
			case b := <-bres:
				_ = ens.HealPeers()
				_, _ = ens.WaitLeader(ctx)
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				_ = cRel(rctx)
				if b.err == nil {
					_ = b.release(rctx)
				}
				t.Fatalf("b's Acquire returned (err %v) while c holds the lock: it took the lock on its cut-off server's stale listing after a's node read as gone", b.err)
			case <-time.After(2 * time.Second):
			}
			require.NoError(t, ens.HealPeers())
			_, err = ens.WaitLeader(ctx)
			require.NoError(t, err)
			require.NoError(t, cRel(ctx))
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
