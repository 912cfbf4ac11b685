package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The pending path of watches.armed (the Done channel on the Watch): a data watch whose read is held on its way to the server while an event for the
// node arrives (through the node's exists watch) is marked pending; its read sees the
// change, so it fires only at the next change, once — or, when the client closes first,
// once with EventNotWatching; a Handle and a Done waiter both hear it.
func TestWatchPendingFiresAtNextChangeOrClose(t *testing.T) {
	for _, end := range []string{"change", "close"} {
		t.Run(end, func(t *testing.T) {
			leakcheck.Check(t)
			srv := zktest.NewServer(t)
			proxy := zktest.NewProxy(t, srv.ConnectString())
			sent := make(chan string, 100)
			c, err := framework.New(srv.ConnectString(), framework.WithSessionTimeout(20*time.Second),
				framework.WithDialer(proxy.Dialer()), framework.WithRetryPolicy(testutil.FastRetry(t)),
				framework.WithRequestHook(func(op string) {
					select {
					case sent <- op:
					default:
					}
				}))
			require.NoError(t, err)
			require.NoError(t, c.Start())
			defer c.Close()
			other := testutil.ConnectFailFast(t, srv.ConnectString())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, c.BlockUntilConnected(ctx))
			_, err = other.Create(ctx, "/pd", []byte("old"))
			require.NoError(t, err)
			_, wx, err := c.ExistsW(ctx, "/pd")
			require.NoError(t, err)
			for len(sent) > 0 {
				<-sent
			}

			proxy.StallToServers()
			type res struct {
				data []byte
				w    *framework.Watch
				err  error
			}
			rc := make(chan res, 1)
			go func() {
				d, _, w, err := c.GetDataW(ctx, "/pd")
				rc <- res{d, w, err}
			}()
			require.Equal(t, "getData", <-sent) // the watch is in the registry, its read held
			_, err = other.SetData(ctx, "/pd", []byte("new"), -1)
			require.NoError(t, err)
			testutil.WaitClosed(t, wx.Done(), 10*time.Second, "the exists watch, told of the change")
			proxy.Heal()
			r := <-rc
			require.NoError(t, r.err)
			require.Equal(t, "new", string(r.data), "the read saw the change")
			w := r.w
			h := newCountingHandler()
			w.Handle(h)
			done := w.Done()
			time.Sleep(300 * time.Millisecond) // nothing may fire it: no change since its read
			require.False(t, testutil.IsClosed(done), "fired by an event its read saw: %v", w.Event())
			require.Equal(t, 1, c.Watches())

			if end == "change" {
				_, err = other.SetData(ctx, "/pd", []byte("next"), -1)
				require.NoError(t, err)
				testutil.WaitClosed(t, done, 10*time.Second, "the data watch at the next change")
				require.Eventually(t, func() bool { return h.count(w) == 1 }, 10*time.Second, 10*time.Millisecond)
				require.Equal(t, zk.EventNodeDataChanged, w.Event().Type)
				require.Equal(t, 0, c.Watches())
				require.Equal(t, 0, framework.ZKWatchers(c, "/pd"))
			} else {
				require.NoError(t, c.Close())
				require.True(t, testutil.IsClosed(done))
				require.Equal(t, 1, h.count(w))
				require.Equal(t, zk.EventNotWatching, w.Event().Type)
				require.Equal(t, 0, c.Watches())
			}
			time.Sleep(100 * time.Millisecond)
			require.Equal(t, 1, h.count(w), "told once")
		})
	}
}
