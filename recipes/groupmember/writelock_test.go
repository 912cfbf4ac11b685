package groupmember_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// SetThisData waits for the member's other write within its own context: while one
// SetThisData is stalled (its request held in a stalled connection), one with a 500 ms
// context returns the context's error.
func TestSetThisDataHonoursContextWhileAnotherWriteStalls(t *testing.T) {
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
	m := join(t, c, "/services/stalled", "a", "v0")
	t.Cleanup(proxy.Heal) // before the member's Close
	proxy.Stall()
	stalled := testutil.Go(ctx, func(ctx context.Context) error { return m.SetThisData(ctx, []byte("v1")) })
	select {
	case <-sets:
	case <-ctx.Done():
		t.Fatal("the first SetThisData sent no request")
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	second := testutil.Go(short, func(ctx context.Context) error { return m.SetThisData(ctx, []byte("v2")) })
	err := testutil.Result(t, second, 10*time.Second, "SetThisData with a 500 ms context while another write stalls")
	t.Logf("returned after %v: %v", time.Since(began), err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	proxy.Heal()
	t.Logf("the stalled SetThisData: %v", testutil.Result(t, stalled, 30*time.Second, "the stalled SetThisData"))
}
