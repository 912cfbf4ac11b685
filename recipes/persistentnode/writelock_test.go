package persistentnode_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// SetData waits for the Node's other write within its own context: while a SetData is
// stalled (its request held in a stalled connection), a SetData with a 500 ms context
// returns the context's error; it does not wait for the stalled write.
func TestSetDataHonoursContextWhileAnotherWriteStalls(t *testing.T) {
	for _, kind := range []string{"node", "ttlnode"} {
		t.Run(kind, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			sets := make(chan struct{}, 16)
			c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second),
				framework.WithRequestHook(func(op string) {
					if op == "setData" {
						select {
						case sets <- struct{}{}:
						default:
						}
					}
				}))
			ctx := testutil.Context(t, 60*time.Second)
			var setData func(context.Context, []byte) error
			var closeIt func() error
			if kind == "node" {
				n, err := persistentnode.New(c, "/pn/lockctx/node", []byte("v0"))
				require.NoError(t, err)
				require.NoError(t, n.Start())
				require.NoError(t, n.WaitForInitialCreate(ctx))
				setData, closeIt = n.SetData, n.Close
			} else {
				tn, err := persistentnode.NewTTL(c, "/pn/lockctx/ttl", time.Hour, []byte("v0"))
				require.NoError(t, err)
				require.NoError(t, tn.Start())
				require.NoError(t, tn.WaitForInitialCreate(ctx))
				setData, closeIt = tn.SetData, tn.Close
				for { // the first touch made the child: the next is an hour/2 away
					st, w, err := c.ExistsW(ctx, tn.ChildPath())
					require.NoError(t, err)
					if st != nil {
						break
					}
					select {
					case <-w.Done():
					case <-ctx.Done():
						t.Fatal("no touch child")
					}
				}
			}
			defer func() { proxy.Heal(); _ = closeIt() }()
			for len(sets) > 0 { // the touches and syncs so far
				<-sets
			}
			proxy.Stall()
			stalled := testutil.Go(ctx, func(ctx context.Context) error { return setData(ctx, []byte("v1")) })
			select {
			case <-sets:
			case <-ctx.Done():
				t.Fatal("the first SetData sent no request")
			}
			short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			began := time.Now()
			second := testutil.Go(short, func(ctx context.Context) error { return setData(ctx, []byte("v2")) })
			err := testutil.Result(t, second, 10*time.Second, "SetData with a 500 ms context while another write stalls")
			t.Logf("returned after %v: %v", time.Since(began), err)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			proxy.Heal()
			t.Logf("the stalled SetData: %v", testutil.Result(t, stalled, 30*time.Second, "the stalled SetData"))
		})
	}
}
