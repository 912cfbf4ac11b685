package sharedcount_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// The count goes 0 -> 1 -> 0 while its client is stalled: the node changed twice, and
// holds the same bytes again. A listener hears a change by the node's version (its
// mzxid), not by its bytes: it is told 0 at version 2. (Curator's SharedValue tells its
// listeners after every read that a watch event or a reconnection makes.)
func TestListenerHearsChangeBackToSameValue(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	t.Cleanup(proxy.Heal)
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(30*time.Second))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counts/flip"
	sc, err := sharedcount.New(c, path, 0)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close() })
	heard := make(chan sharedcount.Versioned[int32], 16)
	sc.AddListener(func(v sharedcount.Versioned[int32], err error) {
		if err == nil {
			heard <- v
		}
	})

	proxy.Stall()
	for _, n := range []int32{1, 0} {
		_, err := other.SetData(ctx, path, sharedcount.Encode(n), -1)
		require.NoError(t, err)
	}
	proxy.Heal()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := sc.Get()
		require.NoError(t, err)
		if v.Version == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the count was not read again after the heal: %+v", v)
		time.Sleep(10 * time.Millisecond)
	}
	// One more change, told after whatever the read at version 2 told.
	_, err = other.SetData(ctx, path, sharedcount.Encode(5), -1)
	require.NoError(t, err)
	var got []string
	for {
		select {
		case v := <-heard:
			got = append(got, fmt.Sprintf("%d@v%d", v.Value, v.Version))
			if v.Value != 5 {
				continue
			}
			require.Equal(t, []string{"0@v2", "5@v3"}, got, "the listener did not hear the count change back to 0 (version 2)")
			return
		case <-ctx.Done():
			t.Fatalf("the listener did not hear 5; heard %v", got)
		}
	}
}
