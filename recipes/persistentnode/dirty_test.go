package persistentnode_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestSetDataFailingDuringStepIsWrittenLater: SetData fails (NoAuth for a moment) while
// the loop is inside step, between its read of dirty and its clearing of dirty; the data
// must still be written once the node is seen again, as SetData's error promises.
func TestSetDataFailingDuringStepIsWrittenLater(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var mu sync.Mutex
	armed := false
	steps := 0
	inStep := make(chan struct{})
	release := make(chan struct{})
	hook := func(op string) {
		if op != "getData" { // step's look at the node
			return
		}
		buf := make([]byte, 64<<10)
		if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*Node).step") {
			return
		}
		mu.Lock()
		if !armed {
			mu.Unlock()
			return
		}
		steps++
		s := steps
		mu.Unlock()
		if s == 1 {
			close(inStep)
			<-release
		}
	}
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(hook))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	n, err := persistentnode.New(c, "/pn/d", []byte("old"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	defer n.Close()
	require.NoError(t, n.WaitForInitialCreate(ctx))
	mu.Lock()
	armed = true
	mu.Unlock()
	proxy.DropConnections() // Reconnected pokes the loop
	testutil.WaitClosed(t, inStep, 20*time.Second, "step")
	_, err = other.SetACL(ctx, "/pn/d", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1)
	require.NoError(t, err)
	err = n.SetData(ctx, []byte("new"))
	t.Logf("SetData: %v", err)
	require.Error(t, err)
	_, err = other.SetACL(ctx, "/pn/d", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	close(release)
	// The poke of the failed SetData makes a next step, which must write the data. Wait
	// for the write with a data watch (no later event would make it happen by chance).
	wctx := testutil.Context(t, 20*time.Second)
	for {
		data, _, w, err := other.GetDataW(wctx, "/pn/d")
		require.NoError(t, err)
		if string(data) == "new" {
			return
		}
		select {
		case <-w.Done():
		case <-wctx.Done():
			t.Fatalf("the data of the failed SetData were never written: the node has %q, n.Data()=%q", data, n.Data())
		}
	}
}
